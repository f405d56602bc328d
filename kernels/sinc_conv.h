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
#ifndef DIARIZATION_KERNELS_SINC_CONV_H_
#define DIARIZATION_KERNELS_SINC_CONV_H_

#include <cuda_runtime_api.h>

#include <cstdint>

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
};
// y[b, c, p] = max(|conv[3p]|, |conv[3p+1]|, |conv[3p+2]|) with
// conv_len = (len - taps) / stride + 1 (no padding), pooled_len =
// conv_len / 3.
absl::Status LaunchSincConvAbsPool(const SincConvParams& p,
                                   cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_SINC_CONV_H_
