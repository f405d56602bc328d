#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "engine/common/indexed_min_heap.h"
#include "kernels/centroid_linkage.h"
#include "kernels/shared_memory_opt_in.h"

// The block's dynamic shared memory, as centroid_linkage_kernels.inc takes
// it (the host emulation of its test defines its own).
__device__ __forceinline__ unsigned char* DynamicSharedMemory() {
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  return dynamic_shared;
}

#include "kernels/centroid_linkage_kernels.inc"

namespace diarization::kernels {
namespace {

using centroid_linkage_internal::InitialNeighboursKernel;
using centroid_linkage_internal::kThreads;
using centroid_linkage_internal::MergeLoopKernel;
using centroid_linkage_internal::SharedBytes;

}  // namespace

absl::Status LaunchCentroidLinkage(const CentroidLinkageParams& p,
                                   cudaStream_t stream) {
  if (p.n < 2 || p.n > kCentroidLinkageMaxN) {
    return absl::InvalidArgumentError("centroid linkage: n must be in [2, " +
                                      std::to_string(kCentroidLinkageMaxN) +
                                      "], got " + std::to_string(p.n));
  }
  if (p.matrix == nullptr || p.merges == nullptr ||
      p.scratch_neighbor == nullptr || p.scratch_min == nullptr ||
      p.error == nullptr) {
    return absl::InvalidArgumentError("centroid linkage: null buffer");
  }
  const int n = p.n;
  const int rows_per_block = 8;  // warps per block
  InitialNeighboursKernel<<<(n - 1 + rows_per_block - 1) / rows_per_block,
                            32 * rows_per_block, 0, stream>>>(
      p.matrix, n, p.scratch_neighbor, p.scratch_min);
  const size_t shared = SharedBytes(n);
  absl::Status opt_in = OptInSharedMemory(
      MergeLoopKernel, static_cast<int>(SharedBytes(kCentroidLinkageMaxN)),
      "MergeLoopKernel");
  if (!opt_in.ok()) return opt_in;
  MergeLoopKernel<<<1, kThreads, shared, stream>>>(
      p.matrix, n, p.scratch_neighbor, p.scratch_min, p.merges, p.error);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("centroid linkage launch: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
