// A float64 CPU reference of one bidirectional LSTM layer's recurrence, in
// the layouts of kernels/lstm.h: what the GPU recurrence kernels are tested
// and qualified against (kernels/lstm_cluster_test.cc, bench/qualify/).
#ifndef DIARIZATION_KERNELS_LSTM_REFERENCE_H_
#define DIARIZATION_KERNELS_LSTM_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace diarization::kernels {

// The shapes of kernels/lstm.h (kept here too: this file builds without CUDA).
inline constexpr int kLstmReferenceHidden = 128;
inline constexpr int kLstmReferenceGates = 4 * kLstmReferenceHidden;

// h of one window, (steps, 256) = [h_forward | h_reverse] per step, from
// gates_in (batch, steps, 1024) and w_hh (2, 512, 128) in PyTorch's
// row-major layout (not transposed). Gate order [i | f | g | o],
// h0 = c0 = 0.
std::vector<double> LstmRecurrenceReference(const float* gates_in,
                                            const float* w_hh, int64_t window,
                                            int steps);

// (2, 512, 128) → (2, 128, 512), the layout the kernels read.
std::vector<float> TransposeWhh(const std::vector<float>& w_hh);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_LSTM_REFERENCE_H_
