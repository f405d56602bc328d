// The embedding ResNet's stem as a direct kernel: a 3×3 convolution from one
// input channel to 32, padding 1, stride 1, with bias and ReLU, writing
// channels-last (NHWC) output. cuDNN has no tensor-core engine for a single
// input channel (its generic kernel ran the stem at ~3 TFLOP/s,
// docs/benchmarks.md); the layer is bound by writing its 32-channel output,
// which this kernel does with one coalesced float4 store per thread.
//
// Arithmetic: float32 FMAs, bias first, then the taps in (dy, dx) order
// (zero padding skipped), then max(0, ·). No TF32: more accurate than the
// tensor-core path it replaces. Opt-in (CudaModelOptions::direct_stem_conv).
#ifndef DIARIZATION_KERNELS_STEM_CONV_H_
#define DIARIZATION_KERNELS_STEM_CONV_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kStemConvChannels = 32;

struct StemConvParams {
  const float* x = nullptr;        // (n, h, w): one channel
  const float* weights = nullptr;  // (32, 3, 3), any BatchNorm folded in
  const float* bias = nullptr;     // (32)
  float* y = nullptr;              // (n, h, w, 32), must not alias x
  int n = 0, h = 0, w = 0;
};

// y[b, i, j, k] = max(0, bias[k] + Σ_{dy,dx} weights[k, dy, dx] ·
// x[b, i + dy − 1, j + dx − 1]) with x = 0 outside. InvalidArgument for
// null pointers, non-positive sizes or 16-byte-misaligned y.
absl::Status LaunchStemConv3x3Relu(const StemConvParams& p,
                                   cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_STEM_CONV_H_
