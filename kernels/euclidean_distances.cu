#include <cuda_runtime.h>

#include <string>

#include "kernels/euclidean_distances.h"

namespace diarization::kernels {
namespace {

// 64 × 64 pairs per block of 16 × 16 threads, 4 × 4 pairs per thread
// (rows ty + 16r, columns tx + 16c); coordinates staged 32 at a time as
// float64 in shared memory, padded against bank conflicts on the stores.
constexpr int kTile = 64;
constexpr int kSide = 16;
constexpr int kPer = kTile / kSide;
constexpr int kChunk = 32;

__global__ void __launch_bounds__(kSide* kSide)
    EuclideanDistancesKernel(const float* __restrict__ rows, int n, int d,
                             double* __restrict__ m) {
  const int bi = blockIdx.y, bj = blockIdx.x;
  if (bj < bi) return;  // the lower tiles are the upper ones' mirror images
  __shared__ double a[kChunk][kTile + 1];
  __shared__ double b[kChunk][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * kSide + tx;
  const int i0 = bi * kTile, j0 = bj * kTile;
  double s[kPer][kPer];
#pragma unroll
  for (int r = 0; r < kPer; ++r) {
#pragma unroll
    for (int c = 0; c < kPer; ++c) s[r][c] = 0.0;
  }
  for (int t0 = 0; t0 < d; t0 += kChunk) {
    const int len = min(kChunk, d - t0);
    // 64 rows × 32 coordinates per side: consecutive threads read
    // consecutive coordinates of a row (coalesced).
    for (int e = tid; e < kTile * kChunk; e += kSide * kSide) {
      const int row = e / kChunk, t = e % kChunk;
      const int gi = i0 + row, gj = j0 + row;
      a[t][row] =
          gi < n && t < len
              ? static_cast<double>(rows[static_cast<size_t>(gi) * d + t0 + t])
              : 0.0;
      b[t][row] =
          gj < n && t < len
              ? static_cast<double>(rows[static_cast<size_t>(gj) * d + t0 + t])
              : 0.0;
    }
    __syncthreads();
    for (int t = 0; t < len; ++t) {
      double av[kPer], bv[kPer];
#pragma unroll
      for (int r = 0; r < kPer; ++r) av[r] = a[t][ty + kSide * r];
#pragma unroll
      for (int c = 0; c < kPer; ++c) bv[c] = b[t][tx + kSide * c];
#pragma unroll
      for (int r = 0; r < kPer; ++r) {
#pragma unroll
        for (int c = 0; c < kPer; ++c) {
          // The host loop's `s += diff * diff`, each operation rounded on
          // its own.
          const double diff = __dsub_rn(av[r], bv[c]);
          s[r][c] = __dadd_rn(s[r][c], __dmul_rn(diff, diff));
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kPer; ++r) {
    const int i = i0 + ty + kSide * r;
    if (i >= n) continue;
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int j = j0 + tx + kSide * c;
      if (j >= n) continue;
      const double v = __dsqrt_rn(s[r][c]);
      m[static_cast<size_t>(i) * n + j] = v;
      // A diagonal tile holds both (i, j) and (j, i) itself.
      if (bi != bj) m[static_cast<size_t>(j) * n + i] = v;
    }
  }
}

}  // namespace

absl::Status LaunchEuclideanDistances(const EuclideanDistancesParams& p,
                                      cudaStream_t stream) {
  if (p.n < 1 || p.d < 1) {
    return absl::InvalidArgumentError(
        "Euclidean distances: n and d must be >= 1, got n " +
        std::to_string(p.n) + ", d " + std::to_string(p.d));
  }
  if (p.rows == nullptr || p.matrix == nullptr) {
    return absl::InvalidArgumentError("Euclidean distances: null buffer");
  }
  const int tiles = (p.n + kTile - 1) / kTile;
  EuclideanDistancesKernel<<<dim3(tiles, tiles), dim3(kSide, kSide), 0,
                             stream>>>(p.rows, p.n, p.d, p.matrix);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("Euclidean distances launch: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
