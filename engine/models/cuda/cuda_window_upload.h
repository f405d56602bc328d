// Moves a batch of windows (models::WindowSpans) to the device with as few
// bytes as the batch allows: the covering range of the spans (for
// consecutive windows of one recording, (n − 1)·step + 160000 samples
// instead of n·160000) crosses once through a pinned staging buffer, and
// kernels/window_gather builds the (n, 160000) window tensor on the device.
// When the covering range would not fit the staging buffer (windows far
// apart in a long recording, or of different recordings), each window's
// samples are staged back to back instead, which always fits. When the
// spans' audio is itself page-locked (runtime::Device::pinned_host_floats:
// the engine gathers its batches there), it crosses from where it lies, and
// the host copies nothing.
//
// Lifetime: one uploader per model instance (or per batch in flight), used
// by one thread at a time (the model's). The staging buffers are reused by
// the next Upload, so the caller must synchronise the stream (or at least
// the copies) before the next call, as the models do after each batch; for
// the same reason, page-locked audio must stay unchanged until then.
//
// Ordering: by default the copies and the gather are enqueued on the
// caller's stream, so a batch's copies wait for every kernel queued before
// them. UseCopyStream moves the copies onto a stream of the uploader's own,
// which waits for nothing the caller queued; the caller's stream waits for
// the copies (an event) before the gather. With one uploader per batch in
// flight, the next batch's copies then overlap the kernels of the batch
// before it (in the server, 20 MB per embedding batch of 32 windows of 32
// streams; ADR 0086). The staging is free when the copies start, because
// the caller synchronised its stream before this Upload (Lifetime). Only
// for an uploader with staging of its own: a caller's staging (Create's
// device_staging) may hold the caller's data until the caller's stream
// reaches the gather.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_WINDOW_UPLOAD_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_WINDOW_UPLOAD_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/device_arena.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models::cuda {

class WindowUploader {
 public:
  WindowUploader() = default;
  // Buffers for up to `max_batch` windows, from `arena` (device) and pinned
  // host memory; `owner` names them in the arena's ledger. With
  // `device_staging`, the covering audio lands there instead of in a
  // buffer of its own: max_batch × kWindowSamples floats of the caller's
  // that hold nothing live while an Upload's copies and gather run (the
  // segmentation model lays it out with its activations).
  static absl::StatusOr<WindowUploader> Create(DeviceArena* arena,
                                               int max_batch,
                                               const std::string& owner,
                                               float* device_staging = nullptr);

  // Enqueues on `stream` the windows [first, first + n) of `spans` into
  // `windows` ((n, kWindowSamples) floats on the device). `spans` must be
  // valid (ValidateWindowSpans) and 1 <= n <= max_batch.
  absl::Status Upload(const WindowSpans& spans, int first, int n,
                      const DeviceBuffer& windows, cudaStream_t stream);

  // From now on, the copies of each Upload run on a stream of the
  // uploader's own (see Ordering above). FailedPrecondition for an uploader
  // on the caller's staging; idempotent.
  absl::Status UseCopyStream();
  bool has_copy_stream() const { return copy_ != nullptr; }

 private:
  // The copy stream and its event, released together.
  struct CopyStream {
    cudaStream_t stream = nullptr;
    cudaEvent_t copied = nullptr;  // on `stream`, after an Upload's copies
    ~CopyStream();
  };

  int max_batch_ = 0;
  std::unique_ptr<CopyStream> copy_;  // null: copies on the caller's stream
  PinnedBuffer host_audio_;
  // starts then ends, as int64 (2 × max_batch), in a float-typed pinned
  // buffer: page-aligned, so the int64 view is aligned.
  PinnedBuffer host_index_;
  DeviceBuffer audio_;        // unless the caller gave the staging
  float* staging_ = nullptr;  // audio_ or the caller's
  DeviceBuffer index_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_WINDOW_UPLOAD_H_
