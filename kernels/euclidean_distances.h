// scipy's pdist(x, "euclidean") on the GPU as a full n × n matrix, bit for
// bit the host's engine/pipeline/pdist_direct.h: float32 rows promoted to
// float64, each pair's squared differences summed in coordinate order with
// explicit round-to-nearest intrinsics (no FMA contraction), then the IEEE
// square root. Both triangles are written (d(j, i) is d(i, j): the negated
// difference squares to the same value), the diagonal is zero.
//
// Why on the GPU: the clustering's linkage runs here (centroid_linkage.h);
// computing its distances here too replaces the host's pass over the
// matrix (0.016-0.027 s for an audio hour's ~4000 points on 16 threads) and
// the matrix's upload (128 MB, ~8 ms) with a 4 MB upload of the rows and
// well under a millisecond of FP64 arithmetic.
#ifndef DIARIZATION_KERNELS_EUCLIDEAN_DISTANCES_H_
#define DIARIZATION_KERNELS_EUCLIDEAN_DISTANCES_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace diarization::kernels {

struct EuclideanDistancesParams {
  const float* rows = nullptr;  // n × d, row-major, device
  int n = 0;                    // >= 1
  int d = 0;                    // >= 1
  double* matrix = nullptr;     // n × n, row-major, device: written in full
};

absl::Status LaunchEuclideanDistances(const EuclideanDistancesParams& p,
                                      cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_EUCLIDEAN_DISTANCES_H_
