// The recurrence of one bidirectional LSTM layer (PyTorch gate order
// [i | f | g | o], h0 = c0 = 0), both directions in one launch. The input
// projections x_t·W_ihᵀ + b_ih + b_hh for all steps come precomputed from a
// cuBLAS GEMM; this kernel adds W_hh·h_{t-1} step by step. One block per
// (direction, group of up to 4 windows), one thread per gate row: W_hh is
// read transposed ([k][row]) so a warp's loads are coalesced, and each
// weight read serves the whole group. float32 throughout, expf/tanhf.
//
// Two variants with the same arithmetic in the same order (bit-identical
// results): `resident_weights` (default) loads W_hh once per launch — the
// first 64 columns of each thread's row into registers, the other 64 into
// shared memory — and keeps h as one float4 per unit (4 windows) in shared
// memory, so a step costs shared-memory reads only; it also prefetches the
// next step's input gates. The other variant re-reads W_hh from L2 every
// step (one L2 round trip per 8 columns: ~7.5 µs per step on the H200).
#ifndef DIARIZATION_KERNELS_LSTM_H_
#define DIARIZATION_KERNELS_LSTM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kLstmHidden = 128;
inline constexpr int kLstmGates = 4 * kLstmHidden;  // 512

struct LstmRecurrenceParams {
  // (batch, steps, 2 * 512): forward direction's gates then reverse's.
  const float* gates_in = nullptr;
  // (2, 128, 512): W_hh of each direction, transposed.
  const float* w_hh_t = nullptr;
  // (batch, steps, 256): [h_forward | h_reverse].
  float* out = nullptr;
  int64_t batch = 0;
  int steps = 0;
  bool resident_weights = true;
};
absl::Status LaunchLstmRecurrence(const LstmRecurrenceParams& p,
                                  cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_LSTM_H_
