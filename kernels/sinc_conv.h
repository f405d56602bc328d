// The SincNet filter-bank convolution of the segmentation model (models.md
// §1.2): one input channel, 80 output channels, a long kernel (251 taps) and
// stride 10. cuDNN's FMA-only (FP32-parity) algorithms treat it as a generic
// convolution with a 1-channel reduction; this kernel keeps the whole filter
// bank in shared memory and gives each thread a 3-time × 10-channel register
// tile, so the taps are read once per block and every audio sample loaded
// feeds 10 products. Each convolution output is the float32 fused
// multiply-add chain over the taps in order. The model's next steps, |.| and
// max-pool (kernel 3, stride 3), run on the thread's three times in
// registers, so the unpooled output never reaches device memory.
//
// SincNet's filters have a symmetry the kernel uses when told
// (symmetric_halves): the 40 cosine filters are even and the 40 sine filters
// odd about their centre tap (sincnet_filters.cc writes the right half as
// the mirrored left half). Then each output is the FMA chain over the tap
// pairs j < taps / 2 of f[j] · (x[j] ± x[taps-1-j]), in order, plus the
// centre tap for the even filters: half the multiplies and half the filter
// bank in shared memory. The caller checks the symmetry once
// (HasSymmetricHalves); with other filters the general form runs.
#ifndef DIARIZATION_KERNELS_SINC_CONV_H_
#define DIARIZATION_KERNELS_SINC_CONV_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kSincConvChannels = 80;
inline constexpr int kSincConvMaxTaps = 256;

struct SincConvParams {
  const float* x = nullptr;        // (batch, len)
  const float* filters = nullptr;  // (80, taps), torch's (out, 1, taps)
  float* y = nullptr;              // (batch, 80, pooled_len)
  int64_t batch = 0;
  int len = 0;
  int taps = 0;  // 1..kSincConvMaxTaps
  int stride = 1;
  // Filters [0, 40) even, [40, 80) odd about the centre, taps odd (checked
  // by the caller with HasSymmetricHalves; the kernel does not look).
  bool symmetric_halves = false;
};
// y[b, c, p] = max(|conv[3p]|, |conv[3p+1]|, |conv[3p+2]|) with
// conv_len = (len - taps) / stride + 1 (no padding), pooled_len =
// conv_len / 3.
absl::Status LaunchSincConvAbsPool(const SincConvParams& p,
                                   cudaStream_t stream);

// Whether (80, taps) host filters have the symmetry symmetric_halves needs,
// exactly (every mirrored pair equal, or equal and opposite, in float32).
bool HasSymmetricHalves(std::span<const float> filters, int taps);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_SINC_CONV_H_
