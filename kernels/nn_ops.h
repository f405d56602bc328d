// Small element-wise and row-wise network ops for the CUDA backend, each a
// memory-bound pass between cuDNN convolutions and cuBLAS GEMMs:
//  - ScaleShiftAct: eval BatchNorm as y*scale[c] + shift[c] (torch's CPU
//    order: alpha = gamma/sqrt(var+eps), beta = bias - mean*alpha), plus an
//    optional residual, plus optional ReLU (WeSpeaker BasicBlock epilogue).
//  - MaxPool1d(k=3, s=3) over rows, with an optional |x| before it (SincNet
//    stage 0) or a per-channel bias added first (conv bias; max commutes
//    with adding a constant, bit for bit).
//  - InstanceNorm1d (affine, biased variance, statistics in float64) with
//    an optional LeakyReLU and an optional (batch, time, channel) output.
//  - Row broadcast (GEMM bias prefill), LeakyReLU, LogSoftmax over rows.
// All float32; products and sums are rounded separately (no fused
// multiply-add) where the CPU reference rounds them separately.
#ifndef DIARIZATION_KERNELS_NN_OPS_H_
#define DIARIZATION_KERNELS_NN_OPS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

// x, out: (n, channels, spatial) contiguous, or (n, spatial, channels) when
// channels_last; residual same shape or null.
struct ScaleShiftActParams {
  const float* x = nullptr;
  const float* scale = nullptr;  // (channels)
  const float* shift = nullptr;  // (channels)
  const float* residual = nullptr;
  float* out = nullptr;  // may alias x
  int64_t n = 0;
  int channels = 0;
  int64_t spatial = 0;
  bool relu = false;
  bool channels_last = false;
};
absl::Status LaunchScaleShiftAct(const ScaleShiftActParams& p,
                                 cudaStream_t stream);

// x: (rows, in_len) with rows = batch*channels; out: (rows, in_len/3).
struct MaxPool3Params {
  const float* x = nullptr;
  const float* bias = nullptr;  // (channels) or null
  float* out = nullptr;
  int64_t rows = 0;
  int channels = 1;
  int64_t in_len = 0;
  bool abs_first = false;
};
absl::Status LaunchMaxPool3(const MaxPool3Params& p, cudaStream_t stream);

// x: (batch*channels, len). out: same layout, or (batch, len, channels) when
// transpose_out. gamma/beta: (channels).
struct InstanceNormParams {
  const float* x = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* out = nullptr;
  int64_t batch = 0;
  int channels = 0;
  int64_t len = 0;
  float eps = 1e-5f;
  bool leaky = false;
  float slope = 0.01f;
  bool transpose_out = false;
};
absl::Status LaunchInstanceNorm(const InstanceNormParams& p,
                                cudaStream_t stream);

// out (rows, cols) = row vector `row` repeated.
absl::Status LaunchBroadcastRows(const float* row, float* out, int64_t rows,
                                 int cols, cudaStream_t stream);
absl::Status LaunchLeakyRelu(float* x, int64_t n, float slope,
                             cudaStream_t stream);
// out (rows, cols) = log_softmax(x) over each row; cols <= 32.
absl::Status LaunchLogSoftmax(const float* x, float* out, int64_t rows,
                              int cols, cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_NN_OPS_H_
