// The clustering's centroid linkage on a GPU (kernels/centroid_linkage.h)
// behind pipeline::LinkageAccelerator: AhcCluster hands it the distance
// matrix's upper triangle and gets back the host linkage's merges, bit for
// bit (ADR 0082).
//
// Contract:
// - Create reserves everything a call needs for max_n points on the device
//   (max_n² float64 for the matrix, from the arena: 128 MiB at 4096; the
//   merges and scratch), the same matrix in page-locked host memory (128
//   MiB at 4096: AhcCluster writes the distances there, so they cross at
//   the link's speed and no call faults in fresh pages) and a non-blocking
//   stream of its own, so a call allocates nothing.
// - One call at a time: Reserve while another call is held returns null at
//   once (the caller runs the host linkage, which gives the same merges),
//   so concurrent clusterings never queue behind each other here.
// - A CUDA error or a kernel that found nothing to merge (NaN distances)
//   returns false as well, is counted, and is reported once as a
//   diagnostic; the host linkage then answers the request.
// - Thread-safe. The arena must outlive it.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda_buffers.h"
#include "engine/models/device_arena.h"
#include "engine/pipeline/ahc.h"

namespace diarization::models::cuda {

class CudaLinkage final : public pipeline::LinkageAccelerator {
 public:
  // max_n: 2 .. kernels::kCentroidLinkageMaxN (the default).
  static absl::StatusOr<std::unique_ptr<CudaLinkage>> Create(DeviceArena* arena,
                                                             int max_n = 0);
  ~CudaLinkage() override;

  int max_n() const override { return max_n_; }
  // Holds the linkage until the call is destroyed; its host matrix is the
  // page-locked one.
  std::unique_ptr<Call> Reserve(int n) override;

  // One linkage of the upper triangle of `upper` (n × n, anywhere in host
  // memory) with its error (tests); Unavailable when busy.
  absl::StatusOr<std::vector<pipeline::Merge>> Run(
      std::span<const double> upper, int n);

  struct Counts {
    int64_t ran = 0;     // calls answered here
    int64_t busy = 0;    // turned away: another call was running
    int64_t failed = 0;  // CUDA errors or no pair to merge
    // Device time of the calls that ran (CUDA events): the matrix's upload
    // and the kernels.
    double upload_s = 0.0;
    double kernel_s = 0.0;
  };
  Counts counts() const;
  // "GPU linkage: N calls (upload X s, kernels Y s per call), B busy, F
  // failed".
  std::string Describe() const override;

 private:
  class ReservedCall;
  CudaLinkage() = default;
  absl::StatusOr<std::vector<pipeline::Merge>> RunLocked(
      std::span<const double> upper, int n);
  // Counts a finished run and reports the first failure; whether it ran.
  bool Count(const absl::StatusOr<std::vector<pipeline::Merge>>& z);

  DeviceArena* arena_ = nullptr;
  int max_n_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer matrix_, merges_, neighbor_, min_dist_, error_;
  PinnedBuffer host_matrix_;  // max_n² float64, as 2 × max_n² floats
  std::mutex mu_;
  std::atomic<int64_t> ran_{0}, busy_{0}, failed_{0};
  std::atomic<bool> reported_{false};
  cudaEvent_t start_ = nullptr, uploaded_ = nullptr, linked_ = nullptr;
  mutable std::mutex times_mu_;
  double upload_s_ = 0.0, kernel_s_ = 0.0;  // guarded by times_mu_
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_H_
