// Device time of a model's batches, from CUDA events around each batch's
// work on the model's stream (uploads, kernels, download). The difference
// between a stage's wall time and this is the time the GPU waited for the
// host: the gap that docs/benchmarks.md reports. Events are recorded with
// timing enabled, so each costs a few microseconds; one pair per batch.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUSY_TIMER_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUSY_TIMER_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {

class BusyTimer {
 public:
  BusyTimer() = default;
  ~BusyTimer() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  BusyTimer(const BusyTimer&) = delete;
  BusyTimer& operator=(const BusyTimer&) = delete;

  absl::Status Begin(cudaStream_t stream) {
    if (start_ == nullptr) {
      absl::Status s = CudaStatus(cudaEventCreate(&start_), "cudaEventCreate");
      if (!s.ok()) return s;
      s = CudaStatus(cudaEventCreate(&stop_), "cudaEventCreate");
      if (!s.ok()) return s;
    }
    return CudaStatus(cudaEventRecord(start_, stream), "cudaEventRecord");
  }
  absl::Status End(cudaStream_t stream) {
    return CudaStatus(cudaEventRecord(stop_, stream), "cudaEventRecord");
  }
  // Blocks until the stream has passed End() (not the work queued after it).
  absl::Status Wait() {
    return CudaStatus(cudaEventSynchronize(stop_), "cudaEventSynchronize");
  }
  // After the stream was synchronised past End().
  absl::Status Accumulate() {
    float ms = 0.0f;
    absl::Status s = CudaStatus(cudaEventElapsedTime(&ms, start_, stop_),
                                "cudaEventElapsedTime");
    if (s.ok()) seconds_ += ms * 1e-3;
    return s;
  }
  double seconds() const { return seconds_; }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  double seconds_ = 0.0;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUSY_TIMER_H_
