// scipy's centroid linkage (fast_linkage: Müllner's generic algorithm with
// the centroid Lance–Williams update) on the GPU, merge for merge and bit for
// bit the host's engine/pipeline/ahc.cc CentroidLinkageSquare, which matches
// scipy (engine/pipeline/ahc_scipy_parity_test).
//
// Why on the GPU: the linkage is sequential in its merges, and each merge
// updates one row of the n × n float64 matrix and writes its mirror, one
// entry in every other row. On the host that is a cache miss per live
// cluster per merge once the matrix (82 MB at n = 3200) outgrows the last
// level cache: 0.2 s of the 1.6 s an audio hour takes on the H200 machine's
// host. Here one block runs the merge loop with the matrix in device memory
// and everything else (the min-heap, the nearest-neighbour candidates, the
// sizes and ids) in shared memory.
//
// Exactness: the same operations in the same order as the host. The
// centroid update is written with explicit IEEE round-to-nearest intrinsics
// (no FMA contraction); the nearest-neighbour scans are block reductions
// that keep the first strict minimum (the smallest index among equal
// values), as the host's sequential scan does; the heap is the host's binary
// heap, updated by one thread in the host's order (ascending cluster index
// within a merge, then the merged cluster's own candidate).
#ifndef DIARIZATION_KERNELS_CENTROID_LINKAGE_H_
#define DIARIZATION_KERNELS_CENTROID_LINKAGE_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

// The largest n the kernel takes: its shared memory holds ~53 bytes per
// point (213 KiB at 4096), and the host clusters larger inputs blockwise
// anyway (AhcOptions::exact_max_n).
inline constexpr int kCentroidLinkageMaxN = 4096;

// One row of scipy's Z: clusters a < b merged at `distance`, `size` members.
struct LinkageMerge {
  int a = 0;
  int b = 0;
  int size = 0;
  int pad = 0;
  double distance = 0.0;
};

struct CentroidLinkageParams {
  // n × n float64, row-major, on the device: the symmetric distances
  // (euclidean_distances.h writes them). The whole matrix is overwritten by
  // the merges. The diagonal is never read.
  double* matrix = nullptr;
  int n = 0;  // 2 .. kCentroidLinkageMaxN
  // n - 1 merges (device), in scipy's order.
  LinkageMerge* merges = nullptr;
  // Device scratch: n ints, n doubles (the initial nearest neighbours).
  int* scratch_neighbor = nullptr;
  double* scratch_min = nullptr;
  // Device int, set to nonzero when the loop found no pair to merge (only
  // with NaN or infinite distances; the host's loop would read out of
  // bounds there). The merges are then incomplete.
  int* error = nullptr;
};

// The initial neighbours and the merge loop, in order on `stream`.
absl::Status LaunchCentroidLinkage(const CentroidLinkageParams& p,
                                   cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_CENTROID_LINKAGE_H_
