// The two networks behind one interface, for every backend (CPU, CUDA).
//
// Shapes follow pyannote (../shared/specs/models.md): a window is 10 s of
// 16 kHz mono float32 audio in [-1, 1]; segmentation gives (589, 7) powerset
// log-probabilities per window; the embedding model takes a window and
// several per-frame speaker weights (589 segmentation frames each), runs the
// fbank and ResNet trunk once per window and pools once per mask.
#ifndef DIARIZATION_ENGINE_MODELS_MODEL_INTERFACES_H_
#define DIARIZATION_ENGINE_MODELS_MODEL_INTERFACES_H_

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/common/shapes.h"

namespace diarization::models {

// The shapes live in engine/common/shapes.h; named here too so that the
// backends' callers may write models::kWindowSamples and the like.
using ::diarization::kEmbeddingDim;
using ::diarization::kFramesPerWindow;
using ::diarization::kLocalSpeakers;
using ::diarization::kPowersetClasses;
using ::diarization::kSampleRateHz;
using ::diarization::kWindowSamples;

// A batch of windows given as slices of longer recordings, so that
// overlapping windows cross to the device once (pyannote's windows overlap
// 10×: 10 s long, 1 s apart). Window i is audio[starts[i], ends[i]) followed
// by zeros up to kWindowSamples (the zero-padded last window of a
// recording). Requires 0 <= starts[i] <= ends[i] <= audio.size() and
// ends[i] - starts[i] <= kWindowSamples; starts and ends have one entry per
// window.
struct WindowSpans {
  std::span<const float> audio;
  std::span<const int64_t> starts;
  std::span<const int64_t> ends;

  int batch() const { return static_cast<int>(starts.size()); }
};

// InvalidArgument unless `spans` meets WindowSpans' requirements.
absl::Status ValidateWindowSpans(const WindowSpans& spans);
// The batch × kWindowSamples contiguous windows that `spans` describe (the
// host path; device backends gather on the device instead).
std::vector<float> MaterializeWindows(const WindowSpans& spans);

// Contiguous windows (batch × kWindowSamples, as Run takes them) as the
// spans that touch end to end, for a backend whose Run forwards to its
// RunSpans: window i of spans() is window first + i of `windows`, for
// 0 <= i < count. Holds the starts and ends that spans() points into, so it
// is neither copied nor moved; `windows` must outlive it.
class ContiguousWindowSpans {
 public:
  ContiguousWindowSpans(std::span<const float> windows, int first, int count);
  ContiguousWindowSpans(const ContiguousWindowSpans&) = delete;
  ContiguousWindowSpans& operator=(const ContiguousWindowSpans&) = delete;

  WindowSpans spans() const {
    return {.audio = windows_, .starts = starts_, .ends = ends_};
  }

 private:
  std::span<const float> windows_;
  std::vector<int64_t> starts_, ends_;
};

// Thread-compatible: one caller at a time per instance (a device worker owns
// its models). Implementations may use internal thread pools.
class SegmentationModel {
 public:
  virtual ~SegmentationModel() = default;

  // windows: batch × kWindowSamples, contiguous. log_probs: batch ×
  // kFramesPerWindow × kPowersetClasses, written in full.
  virtual absl::Status Run(std::span<const float> windows, int batch,
                           std::span<float> log_probs) = 0;

  // Run on windows given as spans (see WindowSpans). The default
  // materialises them on the host; device backends upload the spans once.
  virtual absl::Status RunSpans(const WindowSpans& spans,
                                std::span<float> log_probs);

  // "fp32" or "tf32".
  virtual std::string precision() const = 0;
};

class EmbeddingModel {
 public:
  virtual ~EmbeddingModel() = default;

  // windows: batch × kWindowSamples. masks: batch × masks_per_window ×
  // kFramesPerWindow per-frame weights (pyannote passes 0/1). embeddings:
  // batch × masks_per_window × kEmbeddingDim, written in full. An all-zero
  // mask gives the embedding layer's bias, as in pyannote.
  virtual absl::Status Run(std::span<const float> windows, int batch,
                           std::span<const float> masks, int masks_per_window,
                           std::span<float> embeddings) = 0;

  // Run on windows given as spans (see WindowSpans); masks and embeddings
  // as in Run, with batch = spans.batch().
  virtual absl::Status RunSpans(const WindowSpans& spans,
                                std::span<const float> masks,
                                int masks_per_window,
                                std::span<float> embeddings);

  // Pipelining, for a caller that prepares its next batch while the device
  // runs the current one (runtime's embedding thread, the offline pass):
  //  - StartSpans takes what RunSpans takes and may return before the batch
  //    is done. `masks` may be reused once it returns; `spans.audio` must
  //    stay unchanged, and `embeddings` valid, until the batch is finished
  //    (a device may read the audio late and writes the embeddings then).
  //  - FinishSpans waits for the oldest started batch, writes its
  //    embeddings and returns the batch's status: every error of a batch
  //    (bad input included) comes from its FinishSpans, so each StartSpans
  //    that returned OK is followed by one FinishSpans. FailedPrecondition
  //    when none is started.
  //  - At most two batches may be started and not finished: start batch
  //    k + 1, then finish batch k. A third StartSpans is FailedPrecondition
  //    and starts nothing; Run/RunSpans must wait until none is started.
  // The default runs the batch inside StartSpans; pipelined() says whether
  // StartSpans returns before the batch is done.
  virtual absl::Status StartSpans(const WindowSpans& spans,
                                  std::span<const float> masks,
                                  int masks_per_window,
                                  std::span<float> embeddings);
  virtual absl::Status FinishSpans();
  virtual bool pipelined() const { return false; }

  virtual std::string precision() const = 0;

 private:
  // The default StartSpans' results, oldest first.
  std::deque<absl::Status> started_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_MODEL_INTERFACES_H_
