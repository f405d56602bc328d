// The clustering's distances and centroid linkage on a GPU
// (kernels/euclidean_distances.h, kernels/centroid_linkage.h) behind
// pipeline::LinkageAccelerator: AhcCluster hands it the unit rows and gets
// back the host's merges, bit for bit (ADR 0082, ADR 0088).
//
// Contract:
// - Create reserves everything a call needs for max_n points of up to max_d
//   coordinates on the device (max_n² float64 for the matrix, from the
//   arena: 128 MiB at 4096; the rows, merges and scratch), the rows' staging
//   in page-locked host memory (4 MiB at 4096 × 256) and a non-blocking
//   stream of its own, so a call allocates nothing.
// - One call at a time: Reserve while another call is held returns null at
//   once (the caller runs the host's distances and linkage, which give the
//   same merges), so concurrent clusterings never queue behind each other
//   here. Reserve also returns null for d > max_d.
// - A CUDA error or a kernel that found nothing to merge (NaN distances)
//   returns false as well, is counted, and is reported once as a
//   diagnostic; the host then answers the request.
// - Thread-safe. The arena must outlive it.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_CUDA_LINKAGE_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_CUDA_LINKAGE_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/common/shapes.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/device_arena.h"
#include "engine/pipeline/ahc.h"

namespace diarization::models::cuda {

class CudaLinkage final : public pipeline::LinkageAccelerator {
 public:
  // max_n: 2 .. kernels::kCentroidLinkageMaxN (0: that maximum);
  // max_d >= 1 (default: the embedding model's width).
  static absl::StatusOr<std::unique_ptr<CudaLinkage>> Create(
      DeviceArena* arena, int max_n = 0, int max_d = kEmbeddingDim);
  ~CudaLinkage() override;

  int max_n() const override { return max_n_; }
  int max_d() const { return max_d_; }
  // Holds the linkage until the call is destroyed.
  std::unique_ptr<Call> Reserve(int n, int d) override;

  // One call's work on n rows (n × d float32, host) with its error (tests);
  // Unavailable when busy. `distances`, when given, receives the device's
  // n × n distance matrix as the linkage got it.
  absl::StatusOr<std::vector<pipeline::Merge>> Run(
      std::span<const float> rows, int n, int d,
      std::vector<double>* distances = nullptr);

  struct Counts {
    int64_t ran = 0;     // calls answered here
    int64_t busy = 0;    // turned away: another call was running
    int64_t failed = 0;  // CUDA errors or no pair to merge
    // Device time of the calls that ran (CUDA events): the rows' upload,
    // the distances, the linkage's kernels.
    double upload_s = 0.0;
    double distances_s = 0.0;
    double kernel_s = 0.0;
  };
  Counts counts() const;
  // "GPU linkage: N calls (upload X s, distances Y s, linkage Z s per
  // call), B busy, F failed".
  std::string Describe() const override;

 private:
  class ReservedCall;
  CudaLinkage() = default;
  // One call under the lock: RunOnStream, then, if it failed, waits for
  // whatever it left on the stream.
  absl::StatusOr<std::vector<pipeline::Merge>> RunLocked(
      std::span<const float> rows, int n, int d,
      std::vector<double>* distances);
  absl::StatusOr<std::vector<pipeline::Merge>> RunOnStream(
      std::span<const float> rows, int n, int d,
      std::vector<double>* distances);
  // Counts a finished run and reports the first failure; whether it ran.
  bool Count(const absl::StatusOr<std::vector<pipeline::Merge>>& z);

  DeviceArena* arena_ = nullptr;
  int max_n_ = 0;
  int max_d_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer rows_, matrix_, merges_, neighbor_, min_dist_, error_;
  PinnedBuffer host_rows_;  // max_n × max_d floats: the rows' staging
  std::mutex mu_;
  std::atomic<int64_t> ran_{0}, busy_{0}, failed_{0};
  std::atomic<bool> reported_{false};
  cudaEvent_t start_ = nullptr, uploaded_ = nullptr, measured_ = nullptr,
              linked_ = nullptr;
  mutable std::mutex times_mu_;
  // Guarded by times_mu_.
  double upload_s_ = 0.0, distances_s_ = 0.0, kernel_s_ = 0.0;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_LINKAGE_CUDA_LINKAGE_H_
