// The segmentation model's two 1-D convolutions (models.md §1.2: 80 → 60 and
// 60 → 60 channels, kernel 5, stride 1, no padding) with the max-pool that
// follows each (kernel 3, stride 3) and the convolution's bias, as one
// direct float32 kernel. cuDNN's FMA-only (FP32-parity) algorithms run these
// as a generic implicit GEMM (`implicit_convolve_sgemm`, about a third of
// the GPU's FP32 rate) and write the unpooled output, which a second kernel
// reads back to pool; here each block keeps a chunk of input channels and
// their weights in shared memory and each thread a 5-channel × 12-time
// register tile (60 products per loaded weight group, 20 per input value),
// and pools its 12 times to 4 in registers, so the unpooled output never
// reaches device memory.
//
// Arithmetic: each convolution output is a float32 FMA chain over the input
// channels in ascending order and, within a channel, the taps in order;
// then the max of three outputs, then + bias (rounded to nearest, as
// nn_ops' LaunchMaxPool3 adds it). The CUDA segmentation's only path for
// these two layers since the H200 round of 2026-12-05 (ADR 0093).
#ifndef DIARIZATION_KERNELS_CONV1D_POOL_H_
#define DIARIZATION_KERNELS_CONV1D_POOL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kConv1dPoolOutChannels = 60;
inline constexpr int kConv1dPoolTaps = 5;
inline constexpr int kConv1dPoolMaxInChannels = 256;

struct Conv1dPoolParams {
  const float* x = nullptr;  // (batch, in_channels, len)
  // (in_channels, 5, 60): Conv1dPoolWeights of torch's (60, in_channels,
  // 5), so that each chunk of input channels is one contiguous run.
  const float* weights = nullptr;
  const float* bias = nullptr;  // (60)
  float* y = nullptr;           // (batch, 60, pooled_len); not aliasing x
  int64_t batch = 0;
  int in_channels = 0;  // 1..kConv1dPoolMaxInChannels
  int len = 0;          // >= 5 + 2 (at least one pooled output)
};

// With w the weights in torch's layout, conv[b, o, t] = Σ_{c, k}
// w[o, c, k] · x[b, c, t + k] for t < conv_len = len - 4, and
// y[b, o, p] = max(conv[3p], conv[3p + 1], conv[3p + 2]) + bias[o] for
// p < pooled_len = conv_len / 3. InvalidArgument for null pointers or sizes
// out of range.
absl::Status LaunchConv1dMaxPool3(const Conv1dPoolParams& p,
                                  cudaStream_t stream);

// The kernel's weight layout, (in_channels, 5, 60), of torch's
// (60, in_channels, 5) weights: weights[(c · 5 + k) · 60 + o] = w[o, c, k].
std::vector<float> Conv1dPoolWeights(std::span<const float> torch_weights,
                                     int in_channels);

// pooled_len for an input of `len` samples (0 when there is none).
constexpr int Conv1dPoolLength(int len) {
  return len >= kConv1dPoolTaps ? (len - kConv1dPoolTaps + 1) / 3 : 0;
}

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_CONV1D_POOL_H_
