// The recurrence of one bidirectional LSTM layer for small batches, W_hh
// split across the 8 CTAs of a thread-block cluster (sm_90). Same contract
// as kernels/lstm.h (PyTorch gate order [i | f | g | o], h0 = c0 = 0, the
// input projections precomputed by a GEMM, float32 throughout).
//
// Layout. One cluster per (direction, group of G windows), G in
// {1, 2, 4, 8, 16}. CTA rank r of the cluster owns hidden units
// [16r, 16r + 16): the 64 gate rows of those units (i, f, g, o) with their
// W_hh rows held in registers (64 rows × 128 columns = 32 KiB per CTA, 32
// floats per thread), so the cell update of a unit needs no other CTA. Each
// step every CTA reads the whole h_{t-1} (128 × G) from its own shared
// memory, computes its 64 rows for the G windows, updates c and h of its 16
// units, and writes its 16 × G new h values into the h buffer of every CTA
// of the cluster (distributed shared memory), then one cluster barrier.
// h is double-buffered, so that barrier is the only one between steps.
//
// Determinism: fixed summation order (each thread sums its 32 columns in k
// order, then a fixed 4-lane butterfly), no atomics: the same inputs give
// the same bits on every run and for every grid size. The arithmetic is not
// the resident kernel's (a different summation order): expect ~1e-6
// differences from it, not equal bits.
//
// Launch rule (cooperative launches, docs/architecture.md): the clusters are
// persistent over window groups; clusters per direction = min(groups,
// floor(share · max co-resident clusters / 2)), the co-resident count from
// cudaOccupancyMaxActiveClusters on the current device, share from the
// caller (the SMs that concurrent work needs are left free). When the device
// cannot host even one cluster per direction the launcher returns
// FailedPrecondition and the caller falls back to kernels/lstm.h.
#ifndef DIARIZATION_KERNELS_LSTM_CLUSTER_H_
#define DIARIZATION_KERNELS_LSTM_CLUSTER_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::kernels {

inline constexpr int kLstmClusterSize = 8;  // CTAs per cluster (portable)

struct LstmClusterParams {
  // (batch, steps, 2 * 512): forward direction's gates then reverse's.
  const float* gates_in = nullptr;
  // (2, 128, 512): W_hh of each direction, transposed (as kernels/lstm.h).
  const float* w_hh_t = nullptr;
  // (batch, steps, 256): [h_forward | h_reverse].
  float* out = nullptr;
  int64_t batch = 0;
  int steps = 0;
  // Windows per cluster: 1, 2, 4, 8 or 16; 0 = the smallest power of two
  // >= min(batch, 8).
  int group = 0;
  // Fraction of the device's co-resident clusters this launch may take
  // (0, 1]; the rest stays free for concurrent work.
  double device_share = 0.5;
};

// What a launch with these parameters would do on the current device.
struct LstmClusterPlan {
  int group = 0;                   // windows per cluster
  int64_t groups = 0;              // window groups per direction
  int clusters_per_direction = 0;  // persistent clusters (<= groups)
  int max_active_clusters = 0;     // cudaOccupancyMaxActiveClusters
};

// FailedPrecondition when the current device cannot host one cluster per
// direction (not sm_90+, no cluster support, MIG slice too small);
// InvalidArgument for bad parameters.
absl::StatusOr<LstmClusterPlan> PlanLstmCluster(const LstmClusterParams& p);

absl::Status LaunchLstmClusterRecurrence(const LstmClusterParams& p,
                                         cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_LSTM_CLUSTER_H_
