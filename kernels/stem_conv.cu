#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/stem_conv.h"

namespace diarization::kernels {
namespace {

constexpr int kC = kStemConvChannels;
constexpr int kQuads = kC / 4;  // threads per output pixel
constexpr int kTaps = 9;
constexpr int kThreads = 256;

// One thread per (pixel, group of 4 channels): the 8 threads of a pixel
// read the same 9 inputs (L1) and write 16 consecutive bytes each, so a
// warp stores 4 pixels × 128 B contiguously.
__global__ void __launch_bounds__(kThreads)
    StemConvKernel(const float* __restrict__ x, const float* __restrict__ wts,
                   const float* __restrict__ bias, float4* __restrict__ y,
                   int h, int w, int64_t total) {
  // Weights as [tap][channel], so a quad's 4 channels of one tap are one
  // float4 and the 8 quads of a warp read 128 consecutive bytes.
  __shared__ float4 sw[kTaps * kQuads];
  __shared__ float4 sb[kQuads];
  for (int t = threadIdx.x; t < kTaps * kC; t += blockDim.x) {
    const int tap = t / kC, k = t % kC;
    reinterpret_cast<float*>(sw)[tap * kC + k] = wts[k * kTaps + tap];
  }
  for (int k = threadIdx.x; k < kC; k += blockDim.x) {
    reinterpret_cast<float*>(sb)[k] = bias[k];
  }
  __syncthreads();
  const int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (idx >= total) return;
  const int q = static_cast<int>(idx % kQuads);
  const int64_t pix = idx / kQuads;
  const int j = static_cast<int>(pix % w);
  const int64_t row = pix / w;  // b * h + i
  const int i = static_cast<int>(row % h);
  const float* plane = x + (row - i) * w;  // item b's (h, w) plane
  float4 acc = sb[q];
#pragma unroll
  for (int dy = 0; dy < 3; ++dy) {
    const int ii = i + dy - 1;
    if (ii < 0 || ii >= h) continue;
#pragma unroll
    for (int dx = 0; dx < 3; ++dx) {
      const int jj = j + dx - 1;
      if (jj < 0 || jj >= w) continue;
      const float v = __ldg(plane + int64_t{ii} * w + jj);
      const float4 c = sw[(dy * 3 + dx) * kQuads + q];
      acc.x = fmaf(v, c.x, acc.x);
      acc.y = fmaf(v, c.y, acc.y);
      acc.z = fmaf(v, c.z, acc.z);
      acc.w = fmaf(v, c.w, acc.w);
    }
  }
  acc.x = fmaxf(acc.x, 0.0f);
  acc.y = fmaxf(acc.y, 0.0f);
  acc.z = fmaxf(acc.z, 0.0f);
  acc.w = fmaxf(acc.w, 0.0f);
  y[idx] = acc;
}

}  // namespace

absl::Status LaunchStemConv3x3Relu(const StemConvParams& p,
                                   cudaStream_t stream) {
  if (p.x == nullptr || p.weights == nullptr || p.bias == nullptr ||
      p.y == nullptr || p.n <= 0 || p.h <= 0 || p.w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchStemConv3x3Relu: null pointer or size n ", p.n,
                     " h ", p.h, " w ", p.w));
  }
  if (reinterpret_cast<uintptr_t>(p.y) % 16 != 0) {
    return absl::InvalidArgumentError(
        "LaunchStemConv3x3Relu: y must be 16-byte aligned (float4 stores)");
  }
  const int64_t total = int64_t{p.n} * p.h * p.w * kQuads;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchStemConv3x3Relu: ", total, " threads exceed one grid"));
  }
  StemConvKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p.x, p.weights, p.bias, reinterpret_cast<float4*>(p.y), p.h, p.w, total);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("StemConvKernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
