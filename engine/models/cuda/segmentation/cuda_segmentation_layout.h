// Where the CUDA segmentation network's activations live: one device buffer
// per model, every tensor of the forward pass a byte range in it, sized for
// max_batch windows. Pure arithmetic (no CUDA), so the layout and what it
// costs at any batch size can be computed and tested anywhere.
//
// Why: the LSTM recurrence needs large batches to fill the GPU (its time
// per launch hardly grows up to 256 windows), and a pipeline's arena should
// stay within 2 GiB. The network's tensors are live at different times, so
// they can share storage; this file decides how, from one written-down
// schedule, and checks the result instead of trusting hand-kept offsets.
//
// The schedule (SegmentationSchedule) lists the steps of
// CudaSegmentationModel's forward pass in the order it enqueues them, with
// the tensors each step reads and writes; a tensor is live from the first
// step that touches it to the last. The stream runs the steps in order, so
// two tensors may share bytes when no step sees both live. Layouts:
//   "packed"   (the model's) tensors by decreasing size, each at the lowest
//              offset clear of every placed tensor it is live with. This
//              meets the lower bound (the LSTM steps: the gates of all
//              steps and one layer's output), 3.0 MB per window (the
//              windows and the upload's staging included).
//   "separate" every tensor its own range: the reference that the GPU test
//              compares "packed" with, bit for bit (CudaHarnessOptions).
// (A third layout, "pools", 6.7 MB per window, was deleted with ADR 0092.)
// In every layout the input windows ("audio", gathered by the window upload)
// and the log-probabilities ("out", downloaded) sit at offset 0, because the
// upload and the download address the buffer from its start; they are
// never live together. The upload's device staging ("staging", the
// covering audio before the gather) is a tensor of the layout too.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_LAYOUT_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_LAYOUT_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::models {

// The forward pass's tensors (models.md §1), each (batch, ...) float32.
enum class SegTensor : int {
  kStaging,   // (≤ n × 160000) the covering audio as uploaded
  kAudio,     // (n, 160000) the windows, gathered from it
  kNormed,    // waveform InstanceNorm
  kPool0,     // (n, 80, 5325) SincNet stage 0 output (normalised in place)
  kPool1,     // (n, 60, 1773)
  kPool2,     // (n, 60, 589)
  kSeq,       // (n, 589, 60) LSTM input
  kGates,     // (n, 589, 1024) one layer's input projections
  kLstmOut0,  // (n, 589, 256) layer outputs
  kLstmOut1,
  kLstmOut2,
  kLstmOut3,
  kLinear0,  // (n, 589, 128)
  kLinear1,  // (n, 589, 128)
  kLogits,   // (n, 589, 7)
  kOut,      // (n, 589, 7) log-probabilities
};
inline constexpr int kSegTensorCount = static_cast<int>(SegTensor::kOut) + 1;

std::string_view SegTensorName(SegTensor t);
// Floats per window of `t`.
size_t SegTensorFloats(SegTensor t);

struct SegStep {
  std::string_view what;
  std::vector<SegTensor> reads, writes;
};
// The forward pass, step by step, as CudaSegmentationModel enqueues it
// (SincNet's filter bank on kernels/sinc_conv; each 1-D convolution with
// its bias and max-pool on kernels/conv1d_pool, one step that reads
// kPool<i-1> while it writes kPool<i>: the unpooled outputs never exist,
// ADR 0093). LSTM layer l reads kSeq (l = 0) or kLstmOut<l-1> and writes
// kLstmOut<l>.
std::vector<SegStep> SegmentationSchedule();

class SegmentationActivationLayout {
 public:
  // Every range starts at a multiple of this.
  static constexpr size_t kAlignment = 256;

  // The layout `mode` ("packed" or "separate") of the schedule for
  // `max_batch` windows, checked (Validate) before it is returned.
  static absl::StatusOr<SegmentationActivationLayout> Plan(
      std::string_view mode, int max_batch);

  // Whether the schedule uses `t`.
  bool used(SegTensor t) const { return slot(t).used; }
  // Byte offset and size (rounded up to kAlignment) of `t` in the buffer.
  size_t offset(SegTensor t) const { return slot(t).offset; }
  size_t bytes(SegTensor t) const { return slot(t).bytes; }
  // The buffer.
  size_t total_bytes() const { return total_bytes_; }
  // The most bytes live at one step: no layout of this schedule can be
  // smaller.
  size_t peak_live_bytes() const { return peak_live_bytes_; }
  int max_batch() const { return max_batch_; }
  const std::string& mode() const { return mode_; }

  // Every used tensor inside the buffer and aligned, and no two tensors
  // that some step sees live at once overlapping; else Internal naming them.
  absl::Status Validate() const;
  // One line: mode, total and per window, each tensor's range.
  std::string Describe() const;

 private:
  struct Slot {
    bool used = false;
    size_t offset = 0, bytes = 0;
    int first = 0, last = 0;  // live from step `first` to `last`
  };
  const Slot& slot(SegTensor t) const { return slots_[static_cast<int>(t)]; }

  std::string mode_;
  int max_batch_ = 0;
  std::array<Slot, kSegTensorCount> slots_{};
  size_t total_bytes_ = 0, peak_live_bytes_ = 0;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_LAYOUT_H_
