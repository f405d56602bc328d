#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/conv1d_pool.h"

namespace diarization::kernels {
namespace {

constexpr int kCo = kConv1dPoolOutChannels;  // 60
constexpr int kTaps = kConv1dPoolTaps;       // 5
// A thread's register tile: 5 output channels × 12 convolution times (4
// pooled outputs). 12 channel groups × 16 time groups = 192 threads; a
// block covers all 60 channels and 192 times (64 pooled outputs).
constexpr int kCoPerThread = 5;
constexpr int kTPerThread = 12;
constexpr int kCoGroups = kCo / kCoPerThread;  // 12
constexpr int kTGroups = 16;
constexpr int kThreads = kCoGroups * kTGroups;  // 192
constexpr int kTileT = kTGroups * kTPerThread;  // 192 convolution times
constexpr int kTilePooled = kTileT / 3;         // 64
constexpr int kTileIn = kTileT + kTaps - 1;     // 196 input samples
// Row pitch of the shared input tile: a multiple of 4 floats, so each
// thread's 16 inputs (12 times + 4 taps) are four aligned float4 loads.
constexpr int kInPitch = 200;
// Input channels per shared-memory chunk.
constexpr int kChunk = 16;
static_assert(kCo % kCoPerThread == 0 && kTPerThread % 3 == 0);
static_assert(kTPerThread + kTaps - 1 == 16 && kInPitch >= kTileIn &&
              kInPitch % 4 == 0);

// Block = (window b, pooled tile): warp w's lanes 0-15 are channel group 2w
// and lanes 16-31 group 2w + 1, lane & 15 the time group, so a half-warp
// reads the same five weights (one broadcast each) and 16 consecutive
// 48-byte input slices (conflict-free float4 phases).
__global__ void __launch_bounds__(kThreads, 3)
    Conv1dMaxPool3Kernel(const float* __restrict__ x,
                         const float* __restrict__ weights,
                         const float* __restrict__ bias, float* __restrict__ y,
                         int in_channels, int len, int pooled_len, int tiles) {
  __shared__ __align__(16) float xs[kChunk * kInPitch];
  // [channel in chunk][tap][output channel]
  __shared__ float ws[kChunk * kTaps * kCo];

  const int64_t b = blockIdx.x / tiles;
  const int tile = static_cast<int>(blockIdx.x % tiles);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cg = 2 * warp + (lane >> 4);
  const int tg = lane & 15;
  const int co0 = cg * kCoPerThread;
  const int t_base = tile * kTileT;  // first convolution time of the block
  const float* xb = x + b * in_channels * int64_t{len};

  float acc[kCoPerThread][kTPerThread];
#pragma unroll
  for (int i = 0; i < kCoPerThread; ++i) {
#pragma unroll
    for (int j = 0; j < kTPerThread; ++j) acc[i][j] = 0.0f;
  }

  for (int c0 = 0; c0 < in_channels; c0 += kChunk) {
    const int cc_count = min(kChunk, in_channels - c0);
    __syncthreads();  // the previous chunk's reads are done
    for (int e = threadIdx.x; e < cc_count * kTileIn; e += kThreads) {
      const int cc = e / kTileIn, j = e % kTileIn;
      const int t = t_base + j;
      xs[cc * kInPitch + j] =
          t < len ? __ldg(xb + int64_t{c0 + cc} * len + t) : 0.0f;
    }
    for (int e = threadIdx.x; e < cc_count * kTaps * kCo; e += kThreads) {
      const int o = e % kCo, rest = e / kCo;
      const int k = rest % kTaps, cc = rest / kTaps;
      ws[e] = __ldg(weights + (int64_t{o} * in_channels + c0 + cc) * kTaps + k);
    }
    __syncthreads();
#pragma unroll 2
    for (int cc = 0; cc < cc_count; ++cc) {
      float xv[16];
      const float4* xr = reinterpret_cast<const float4*>(xs + cc * kInPitch +
                                                         tg * kTPerThread);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = xr[q];
        xv[4 * q] = v.x;
        xv[4 * q + 1] = v.y;
        xv[4 * q + 2] = v.z;
        xv[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int k = 0; k < kTaps; ++k) {
        const float* wr = ws + (cc * kTaps + k) * kCo + co0;
        float wv[kCoPerThread];
#pragma unroll
        for (int i = 0; i < kCoPerThread; ++i) wv[i] = wr[i];
#pragma unroll
        for (int i = 0; i < kCoPerThread; ++i) {
#pragma unroll
          for (int j = 0; j < kTPerThread; ++j) {
            acc[i][j] = fmaf(wv[i], xv[j + k], acc[i][j]);
          }
        }
      }
    }
  }

  // Max over each three times, then the bias, as LaunchMaxPool3 does.
  const int p0 = tile * kTilePooled + tg * (kTPerThread / 3);
#pragma unroll
  for (int i = 0; i < kCoPerThread; ++i) {
    const int o = co0 + i;
    const float bo = __ldg(bias + o);
    float* yr = y + (b * kCo + o) * int64_t{pooled_len};
#pragma unroll
    for (int q = 0; q < kTPerThread / 3; ++q) {
      const int p = p0 + q;
      if (p >= pooled_len) continue;
      const float m =
          fmaxf(fmaxf(acc[i][3 * q], acc[i][3 * q + 1]), acc[i][3 * q + 2]);
      yr[p] = __fadd_rn(m, bo);
    }
  }
}

}  // namespace

absl::Status LaunchConv1dMaxPool3(const Conv1dPoolParams& p,
                                  cudaStream_t stream) {
  if (p.x == nullptr || p.weights == nullptr || p.bias == nullptr ||
      p.y == nullptr) {
    return absl::InvalidArgumentError(
        "LaunchConv1dMaxPool3: x, weights, bias and y must be set");
  }
  const int pooled_len = Conv1dPoolLength(p.len);
  if (p.batch <= 0 || p.in_channels <= 0 ||
      p.in_channels > kConv1dPoolMaxInChannels || pooled_len <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchConv1dMaxPool3: batch ", p.batch, ", in_channels ",
        p.in_channels, " (1 to ", kConv1dPoolMaxInChannels, "), len ", p.len,
        " (at least ", kConv1dPoolTaps + 2, ")"));
  }
  const int tiles = (pooled_len + kTilePooled - 1) / kTilePooled;
  const int64_t blocks = p.batch * tiles;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchConv1dMaxPool3: ", blocks, " blocks exceed one grid"));
  }
  Conv1dMaxPool3Kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p.x, p.weights, p.bias, p.y, p.in_channels, p.len, pooled_len, tiles);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("Conv1dMaxPool3Kernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
