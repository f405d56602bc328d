#include <string>

#include "kernels/shared_memory_opt_in.h"
#include "kernels/sinc_conv.h"

namespace diarization::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChPerWarp = kSincConvChannels / kWarps;  // 10
constexpr int kTimesPerLane = 3;           // one pooling window per lane
constexpr int kTile = 32 * kTimesPerLane;  // convolution times per block
static_assert(kChPerWarp * kWarps == kSincConvChannels);

// Taps held in shared memory: all of them, or with half symmetry the first
// taps / 2 + 1 (the rest mirror them).
int HeldTaps(int taps, bool symmetric) {
  return symmetric ? taps / 2 + 1 : taps;
}

size_t SharedBytes(int taps, int stride, bool symmetric) {
  return sizeof(float) *
         (size_t{static_cast<size_t>(HeldTaps(taps, symmetric))} *
              kSincConvChannels +
          static_cast<size_t>((kTile - 1) * stride + taps));
}

// kSymmetric: filters [0, 40) are even (f[j] == f[taps-1-j]) and [40, 80)
// odd (f[j] == -f[taps-1-j], so their centre tap is 0), taps odd. A warp's
// 10 channels are all even or all odd (40 = 4 warps x 10), so each tap pair
// costs one add (or subtract) per time, shared by the warp's 10 channels,
// and 10 products: half the loads and multiplies of the general form.
template <bool kSymmetric>
__global__ void __launch_bounds__(kThreads)
    SincConvKernel(const float* __restrict__ x,
                   const float* __restrict__ filters, float* __restrict__ y,
                   int len, int pooled_len, int taps, int stride) {
  extern __shared__ float smem[];
  const int held = kSymmetric ? taps / 2 + 1 : taps;
  float* ws = smem;  // (held, 80): one tap's channels side by side
  float* xs = smem + held * kSincConvChannels;
  const int64_t b = blockIdx.y;
  const int t0 = blockIdx.x * kTile;
  const int64_t first = static_cast<int64_t>(t0) * stride;
  const int span = (kTile - 1) * stride + taps;
  for (int i = threadIdx.x; i < held * kSincConvChannels; i += kThreads) {
    const int c = i / held, j = i % held;
    ws[j * kSincConvChannels + c] = filters[c * taps + j];
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
  const float* xl = xs + kTimesPerLane * lane * stride;
  if constexpr (kSymmetric) {
    // Warp-uniform: warps 4..7 hold the odd filters.
    const bool odd = warp >= kWarps / 2;
    const int half = taps / 2;
    for (int j = 0; j < half; ++j) {
      float xv[kTimesPerLane], wv[kChPerWarp];
#pragma unroll
      for (int q = 0; q < kTimesPerLane; ++q) {
        const float lo = xl[q * stride + j];
        const float hi = xl[q * stride + taps - 1 - j];
        xv[q] = odd ? lo - hi : lo + hi;
      }
      // 10 channels at an even offset: five 8-byte broadcast loads.
      const float2* w2 =
          reinterpret_cast<const float2*>(wc + j * kSincConvChannels);
#pragma unroll
      for (int c = 0; c < kChPerWarp / 2; ++c) {
        const float2 v = w2[c];
        wv[2 * c] = v.x;
        wv[2 * c + 1] = v.y;
      }
#pragma unroll
      for (int q = 0; q < kTimesPerLane; ++q)
#pragma unroll
        for (int c = 0; c < kChPerWarp; ++c)
          acc[q][c] = fmaf(wv[c], xv[q], acc[q][c]);
    }
    if (!odd) {  // the even filters' centre tap
#pragma unroll
      for (int q = 0; q < kTimesPerLane; ++q) {
        const float xv = xl[q * stride + half];
#pragma unroll
        for (int c = 0; c < kChPerWarp; ++c)
          acc[q][c] = fmaf(wc[half * kSincConvChannels + c], xv, acc[q][c]);
      }
    }
  } else {
    for (int j = 0; j < taps; ++j) {
      float xv[kTimesPerLane], wv[kChPerWarp];
#pragma unroll
      for (int q = 0; q < kTimesPerLane; ++q) xv[q] = xl[q * stride + j];
#pragma unroll
      for (int c = 0; c < kChPerWarp; ++c)
        wv[c] = wc[j * kSincConvChannels + c];
#pragma unroll
      for (int q = 0; q < kTimesPerLane; ++q)
#pragma unroll
        for (int c = 0; c < kChPerWarp; ++c)
          acc[q][c] = fmaf(wv[c], xv[q], acc[q][c]);
    }
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
      p.stride > 16 || p.len < p.taps + 2 * p.stride || p.batch > 65535 ||
      (p.symmetric_halves && p.taps % 2 == 0)) {
    return absl::InvalidArgumentError(
        "LaunchSincConvAbsPool: bad buffers or sizes (taps 1..256, odd with "
        "symmetric_halves, stride 1..16, at least 3 convolution outputs, "
        "batch 1..65535)");
  }
  // Above 48 KiB a kernel needs an explicit opt-in, on each device.
  auto kernel =
      p.symmetric_halves ? SincConvKernel<true> : SincConvKernel<false>;
  if (absl::Status s = OptInSharedMemory(
          kernel,
          static_cast<int>(
              SharedBytes(kSincConvMaxTaps, 16, p.symmetric_halves)),
          p.symmetric_halves ? "SincConvKernel<symmetric>" : "SincConvKernel");
      !s.ok()) {
    return s;
  }
  const int pooled_len = ((p.len - p.taps) / p.stride + 1) / 3;
  const dim3 grid(static_cast<unsigned>((pooled_len + 31) / 32),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, kThreads, SharedBytes(p.taps, p.stride, p.symmetric_halves),
           stream>>>(p.x, p.filters, p.y, p.len, pooled_len, p.taps, p.stride);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("SincConvKernel launch failed: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

bool HasSymmetricHalves(std::span<const float> filters, int taps) {
  if (taps % 2 == 0 ||
      filters.size() != size_t{kSincConvChannels} * static_cast<size_t>(taps)) {
    return false;
  }
  for (int c = 0; c < kSincConvChannels; ++c) {
    const float* f = filters.data() + static_cast<size_t>(c) * taps;
    const bool odd = c >= kSincConvChannels / 2;
    for (int j = 0; j <= taps / 2; ++j) {
      const float mirror = odd ? -f[taps - 1 - j] : f[taps - 1 - j];
      // Bit equality (a centre tap of an odd filter must be zero).
      if (!(f[j] == mirror)) return false;
    }
  }
  return true;
}

}  // namespace diarization::kernels
