#include <string>

#include "kernels/nn_ops.h"

namespace diarization::kernels {
namespace {

absl::Status LaunchStatus(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(std::string(what) +
                             " launch failed: " + cudaGetErrorString(err));
}

unsigned Blocks(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

__global__ void ScaleShiftActKernel(const float* __restrict__ x,
                                    const float* __restrict__ scale,
                                    const float* __restrict__ shift,
                                    const float* __restrict__ residual,
                                    float* out, int64_t total, int channels,
                                    int64_t spatial, bool relu,
                                    bool channels_last) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int c = channels_last ? static_cast<int>(i % channels)
                              : static_cast<int>((i / spatial) % channels);
  float v = __fadd_rn(__fmul_rn(x[i], scale[c]), shift[c]);
  if (residual != nullptr) v = __fadd_rn(v, residual[i]);
  if (relu) v = fmaxf(v, 0.0f);
  out[i] = v;
}

__global__ void MaxPool3Kernel(const float* __restrict__ x,
                               const float* __restrict__ bias,
                               float* __restrict__ out, int64_t rows,
                               int channels, int64_t in_len, int64_t out_len,
                               bool abs_first) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * out_len) return;
  const int64_t r = i / out_len;
  const int64_t t = i % out_len;
  const float* src = x + r * in_len + 3 * t;
  float a = src[0], b = src[1], c = src[2];
  if (abs_first) {
    a = fabsf(a);
    b = fabsf(b);
    c = fabsf(c);
  }
  float m = fmaxf(fmaxf(a, b), c);
  if (bias != nullptr) m = __fadd_rn(m, bias[r % channels]);
  out[i] = m;
}

// One block per (item, channel) row; kThreads threads per block (a power of
// two, at most 1024).
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    InstanceNormKernel(const float* __restrict__ x,
                       const float* __restrict__ gamma,
                       const float* __restrict__ beta, float* __restrict__ out,
                       int channels, int64_t len, float eps, bool leaky,
                       float slope, bool transpose_out) {
  __shared__ double partial[kThreads];
  __shared__ float alpha_beta[2];
  const int64_t row = blockIdx.x;
  const int c = static_cast<int>(row % channels);
  const int64_t item = row / channels;
  const float* src = x + row * len;
  double sum = 0.0;
  for (int64_t t = threadIdx.x; t < len; t += blockDim.x) sum += src[t];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  const double mean = partial[0] / static_cast<double>(len);
  __syncthreads();
  double sq = 0.0;
  for (int64_t t = threadIdx.x; t < len; t += blockDim.x) {
    const double d = src[t] - mean;
    sq += d * d;
  }
  partial[threadIdx.x] = sq;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float var = static_cast<float>(partial[0] / static_cast<double>(len));
    const float invstd = 1.0f / sqrtf(__fadd_rn(var, eps));
    const float alpha = __fmul_rn(invstd, gamma[c]);
    alpha_beta[0] = alpha;
    alpha_beta[1] =
        __fsub_rn(beta[c], __fmul_rn(static_cast<float>(mean), alpha));
  }
  __syncthreads();
  const float alpha = alpha_beta[0];
  const float shift = alpha_beta[1];
  for (int64_t t = threadIdx.x; t < len; t += blockDim.x) {
    float v = __fadd_rn(__fmul_rn(src[t], alpha), shift);
    if (leaky && v < 0.0f) v = __fmul_rn(v, slope);
    if (transpose_out) {
      out[(item * len + t) * channels + c] = v;
    } else {
      out[row * len + t] = v;
    }
  }
}

__global__ void BroadcastRowsKernel(const float* __restrict__ row,
                                    float* __restrict__ out, int64_t rows,
                                    int cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < rows * cols) out[i] = row[i % cols];
}

__global__ void LeakyReluKernel(float* x, int64_t n, float slope) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n && x[i] < 0.0f) x[i] = __fmul_rn(x[i], slope);
}

__global__ void LogSoftmaxKernel(const float* __restrict__ x,
                                 float* __restrict__ out, int64_t rows,
                                 int cols) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const float* src = x + r * cols;
  float m = src[0];
  for (int c = 1; c < cols; ++c) m = fmaxf(m, src[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c)
    sum = __fadd_rn(sum, expf(__fsub_rn(src[c], m)));
  const float lse = logf(sum);
  for (int c = 0; c < cols; ++c)
    out[r * cols + c] = __fsub_rn(__fsub_rn(src[c], m), lse);
}

}  // namespace

absl::Status LaunchScaleShiftAct(const ScaleShiftActParams& p,
                                 cudaStream_t stream) {
  if (p.x == nullptr || p.scale == nullptr || p.shift == nullptr ||
      p.out == nullptr || p.n <= 0 || p.channels <= 0 || p.spatial <= 0) {
    return absl::InvalidArgumentError(
        "LaunchScaleShiftAct: bad buffers or sizes");
  }
  const int64_t total = p.n * p.channels * p.spatial;
  ScaleShiftActKernel<<<Blocks(total, 256), 256, 0, stream>>>(
      p.x, p.scale, p.shift, p.residual, p.out, total, p.channels, p.spatial,
      p.relu, p.channels_last);
  return LaunchStatus("ScaleShiftActKernel");
}

absl::Status LaunchMaxPool3(const MaxPool3Params& p, cudaStream_t stream) {
  if (p.x == nullptr || p.out == nullptr || p.rows <= 0 || p.in_len < 3 ||
      p.channels <= 0) {
    return absl::InvalidArgumentError("LaunchMaxPool3: bad buffers or sizes");
  }
  const int64_t out_len = p.in_len / 3;
  MaxPool3Kernel<<<Blocks(p.rows * out_len, 256), 256, 0, stream>>>(
      p.x, p.bias, p.out, p.rows, p.channels, p.in_len, out_len, p.abs_first);
  return LaunchStatus("MaxPool3Kernel");
}

absl::Status LaunchInstanceNorm(const InstanceNormParams& p,
                                cudaStream_t stream) {
  if (p.x == nullptr || p.gamma == nullptr || p.beta == nullptr ||
      p.out == nullptr || p.batch <= 0 || p.channels <= 0 || p.len <= 0 ||
      (p.transpose_out && p.out == p.x)) {
    return absl::InvalidArgumentError(
        "LaunchInstanceNorm: bad buffers or sizes");
  }
  const unsigned rows = static_cast<unsigned>(p.batch * p.channels);
  // Long rows (the segmentation's waveform norm: one 160,000-sample row per
  // window, 1 block per SM) need every thread a block can hold to keep
  // enough loads in flight: 256 threads took 0.73 ms per 121 windows.
  if (p.len >= 32768) {
    InstanceNormKernel<1024><<<rows, 1024, 0, stream>>>(
        p.x, p.gamma, p.beta, p.out, p.channels, p.len, p.eps, p.leaky, p.slope,
        p.transpose_out);
  } else {
    InstanceNormKernel<256><<<rows, 256, 0, stream>>>(
        p.x, p.gamma, p.beta, p.out, p.channels, p.len, p.eps, p.leaky, p.slope,
        p.transpose_out);
  }
  return LaunchStatus("InstanceNormKernel");
}

absl::Status LaunchBroadcastRows(const float* row, float* out, int64_t rows,
                                 int cols, cudaStream_t stream) {
  if (row == nullptr || out == nullptr || rows <= 0 || cols <= 0) {
    return absl::InvalidArgumentError(
        "LaunchBroadcastRows: bad buffers or sizes");
  }
  BroadcastRowsKernel<<<Blocks(rows * cols, 256), 256, 0, stream>>>(row, out,
                                                                    rows, cols);
  return LaunchStatus("BroadcastRowsKernel");
}

absl::Status LaunchLeakyRelu(float* x, int64_t n, float slope,
                             cudaStream_t stream) {
  if (x == nullptr || n <= 0)
    return absl::InvalidArgumentError("LaunchLeakyRelu: bad buffer");
  LeakyReluKernel<<<Blocks(n, 256), 256, 0, stream>>>(x, n, slope);
  return LaunchStatus("LeakyReluKernel");
}

absl::Status LaunchLogSoftmax(const float* x, float* out, int64_t rows,
                              int cols, cudaStream_t stream) {
  if (x == nullptr || out == nullptr || rows <= 0 || cols <= 0 || cols > 32) {
    return absl::InvalidArgumentError(
        "LaunchLogSoftmax: bad buffers, or cols outside 1..32");
  }
  LogSoftmaxKernel<<<Blocks(rows, 128), 128, 0, stream>>>(x, out, rows, cols);
  return LaunchStatus("LogSoftmaxKernel");
}

}  // namespace diarization::kernels
