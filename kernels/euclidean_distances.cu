#include <cuda_runtime.h>

#include <string>

#include "kernels/euclidean_distances.h"
#include "kernels/euclidean_distances_kernel.inc"

namespace diarization::kernels {
namespace {

using euclidean_distances_internal::EuclideanDistancesKernel;
using euclidean_distances_internal::kSide;
using euclidean_distances_internal::kTile;

}  // namespace

absl::Status LaunchEuclideanDistances(const EuclideanDistancesParams& p,
                                      cudaStream_t stream) {
  if (p.n < 1 || p.d < 1) {
    return absl::InvalidArgumentError(
        "Euclidean distances: n and d must be >= 1, got n " +
        std::to_string(p.n) + ", d " + std::to_string(p.d));
  }
  if (p.rows == nullptr || p.matrix == nullptr) {
    return absl::InvalidArgumentError("Euclidean distances: null buffer");
  }
  const int tiles = (p.n + kTile - 1) / kTile;
  EuclideanDistancesKernel<<<dim3(tiles, tiles), dim3(kSide, kSide), 0,
                             stream>>>(p.rows, p.n, p.d, p.matrix);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("Euclidean distances launch: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
