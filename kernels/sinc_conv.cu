#include <string>

#include "kernels/sinc_conv.h"
#include "kernels/shared_memory_opt_in.h"

namespace diarization::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChPerWarp = kSincConvChannels / kWarps;  // 10
constexpr int kTimesPerLane = 3;           // one pooling window per lane
constexpr int kTile = 32 * kTimesPerLane;  // convolution times per block
static_assert(kChPerWarp * kWarps == kSincConvChannels);

size_t SharedBytes(int taps, int stride) {
  return sizeof(float) *
         (size_t{static_cast<size_t>(taps)} * kSincConvChannels +
          static_cast<size_t>((kTile - 1) * stride + taps));
}

__global__ void __launch_bounds__(kThreads)
    SincConvKernel(const float* __restrict__ x,
                   const float* __restrict__ filters, float* __restrict__ y,
                   int len, int pooled_len, int taps, int stride) {
  extern __shared__ float smem[];
  float* ws = smem;  // (taps, 80): one tap's channels side by side
  float* xs = smem + taps * kSincConvChannels;
  const int64_t b = blockIdx.y;
  const int t0 = blockIdx.x * kTile;
  const int64_t first = static_cast<int64_t>(t0) * stride;
  const int span = (kTile - 1) * stride + taps;
  for (int i = threadIdx.x; i < taps * kSincConvChannels; i += kThreads) {
    const int c = i / taps, j = i % taps;
    ws[j * kSincConvChannels + c] = filters[i];
  }
  const float* xb = x + b * len;
  for (int i = threadIdx.x; i < span; i += kThreads) {
    const int64_t pos = first + i;
    xs[i] = pos < len ? xb[pos] : 0.0f;
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float* wc = ws + warp * kChPerWarp;
  float acc[kTimesPerLane][kChPerWarp];
#pragma unroll
  for (int q = 0; q < kTimesPerLane; ++q)
#pragma unroll
    for (int c = 0; c < kChPerWarp; ++c) acc[q][c] = 0.0f;
  for (int j = 0; j < taps; ++j) {
    float xv[kTimesPerLane], wv[kChPerWarp];
#pragma unroll
    for (int q = 0; q < kTimesPerLane; ++q)
      xv[q] = xs[(kTimesPerLane * lane + q) * stride + j];
#pragma unroll
    for (int c = 0; c < kChPerWarp; ++c) wv[c] = wc[j * kSincConvChannels + c];
#pragma unroll
    for (int q = 0; q < kTimesPerLane; ++q)
#pragma unroll
      for (int c = 0; c < kChPerWarp; ++c)
        acc[q][c] = fmaf(wv[c], xv[q], acc[q][c]);
  }
  const int p = blockIdx.x * 32 + lane;
  if (p >= pooled_len) return;
#pragma unroll
  for (int c = 0; c < kChPerWarp; ++c) {
    const float m =
        fmaxf(fmaxf(fabsf(acc[0][c]), fabsf(acc[1][c])), fabsf(acc[2][c]));
    y[(b * kSincConvChannels + warp * kChPerWarp + c) * pooled_len + p] = m;
  }
}

}  // namespace

absl::Status LaunchSincConvAbsPool(const SincConvParams& p,
                                   cudaStream_t stream) {
  if (p.x == nullptr || p.filters == nullptr || p.y == nullptr ||
      p.batch <= 0 || p.taps < 1 || p.taps > kSincConvMaxTaps || p.stride < 1 ||
      p.stride > 16 || p.len < p.taps + 2 * p.stride || p.batch > 65535) {
    return absl::InvalidArgumentError(
        "LaunchSincConvAbsPool: bad buffers or sizes (taps 1..256, stride "
        "1..16, at least 3 convolution outputs, batch 1..65535)");
  }
  // Above 48 KiB a kernel needs an explicit opt-in, on each device.
  if (absl::Status s = OptInSharedMemory(
          SincConvKernel, static_cast<int>(SharedBytes(kSincConvMaxTaps, 16)),
          "SincConvKernel");
      !s.ok()) {
    return s;
  }
  const int pooled_len = ((p.len - p.taps) / p.stride + 1) / 3;
  const dim3 grid(static_cast<unsigned>((pooled_len + 31) / 32),
                  static_cast<unsigned>(p.batch));
  SincConvKernel<<<grid, kThreads, SharedBytes(p.taps, p.stride), stream>>>(
      p.x, p.filters, p.y, p.len, pooled_len, p.taps, p.stride);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("SincConvKernel launch failed: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
