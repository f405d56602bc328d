#include <string>

#include "kernels/stats_pool.h"

namespace diarization::kernels {
namespace {

constexpr int kMaxTime = 1024;
// Features per block (one per thread) and masks per block. A block reads
// its features once for all its masks: the masks of one window pool the
// same features, and reading them once per mask made the kernel 10x slower
// than its memory traffic (0.46 ms per batch of 32 windows x 3 masks, with
// one block per (window, mask): 96 blocks for 132 SMs).
constexpr int kFeatPerBlock = 128;
constexpr int kMasksPerBlock = 4;

// Block (item, group of up to kMasksPerBlock masks) x (chunk of features).
// For every (mask, feature) the sums run over time in the same order, in
// the same precision, as one thread per (mask, feature) would.
__global__ void __launch_bounds__(kFeatPerBlock)
    StatsPoolKernel(const float* __restrict__ features,
                    const float* __restrict__ masks, float* __restrict__ stats,
                    int masks_per_item, int mask_groups, int feat, int time,
                    int mask_frames, int cl_rows) {
  __shared__ float w[kMasksPerBlock][kMaxTime];
  __shared__ float denoms[kMasksPerBlock][2];
  const int64_t item = blockIdx.x / mask_groups;
  const int first_mask = (blockIdx.x % mask_groups) * kMasksPerBlock;
  const int group = min(kMasksPerBlock, masks_per_item - first_mask);
  const float scale =
      static_cast<float>(mask_frames) / static_cast<float>(time);
  for (int m = 0; m < group; ++m) {
    const float* mask =
        masks + (item * masks_per_item + first_mask + m) * mask_frames;
    for (int j = threadIdx.x; j < time; j += blockDim.x) {
      int idx = static_cast<int>(floorf(static_cast<float>(j) * scale));
      if (idx > mask_frames - 1) idx = mask_frames - 1;
      w[m][j] = mask[idx];
    }
  }
  __syncthreads();
  if (threadIdx.x < group) {
    const int m = threadIdx.x;
    double s1 = 0.0, s2 = 0.0;
    for (int j = 0; j < time; ++j) {
      s1 += w[m][j];
      s2 += static_cast<double>(__fmul_rn(w[m][j], w[m][j]));
    }
    const float v1 = __fadd_rn(static_cast<float>(s1), 1e-8f);
    const float v2 = static_cast<float>(s2);
    denoms[m][0] = v1;
    denoms[m][1] = __fadd_rn(__fsub_rn(v1, __fdiv_rn(v2, v1)), 1e-8f);
  }
  __syncthreads();
  const int k = blockIdx.y * kFeatPerBlock + threadIdx.x;
  if (k >= feat) return;
  // Channels-last: neighbouring threads take neighbouring channels, so
  // their loads coalesce.
  int f = k;
  int64_t stride = 1;
  const float* x = features + (item * feat + f) * static_cast<int64_t>(time);
  if (cl_rows > 0) {
    const int channels = feat / cl_rows;
    const int ch = k % channels, row = k / channels;
    f = ch * cl_rows + row;
    stride = channels;
    x = features + item * feat * static_cast<int64_t>(time) +
        static_cast<int64_t>(row) * time * channels + ch;
  }
  double swx[kMasksPerBlock] = {};
  for (int j = 0; j < time; ++j) {
    const float xv = x[j * stride];
#pragma unroll
    for (int m = 0; m < kMasksPerBlock; ++m) {
      if (m < group) swx[m] += static_cast<double>(__fmul_rn(xv, w[m][j]));
    }
  }
  float mean[kMasksPerBlock];
#pragma unroll
  for (int m = 0; m < kMasksPerBlock; ++m) {
    mean[m] =
        m < group ? __fdiv_rn(static_cast<float>(swx[m]), denoms[m][0]) : 0.0f;
  }
  double sdx[kMasksPerBlock] = {};
  for (int j = 0; j < time; ++j) {
    const float xv = x[j * stride];
#pragma unroll
    for (int m = 0; m < kMasksPerBlock; ++m) {
      if (m < group) {
        const float d = __fsub_rn(xv, mean[m]);
        sdx[m] += static_cast<double>(__fmul_rn(__fmul_rn(d, d), w[m][j]));
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMasksPerBlock; ++m) {
    if (m < group) {
      const float var = __fdiv_rn(static_cast<float>(sdx[m]), denoms[m][1]);
      float* out = stats + (item * masks_per_item + first_mask + m) * 2 *
                               static_cast<int64_t>(feat);
      out[f] = mean[m];
      out[feat + f] = sqrtf(var);
    }
  }
}

}  // namespace

absl::Status LaunchStatsPool(const StatsPoolParams& p, cudaStream_t stream) {
  if (p.features == nullptr || p.masks == nullptr || p.stats == nullptr ||
      p.batch <= 0 || p.masks_per_item <= 0 || p.feat <= 0 || p.time <= 0 ||
      p.time > kMaxTime || p.mask_frames <= 0 || p.channels_last_rows < 0 ||
      (p.feat + kFeatPerBlock - 1) / kFeatPerBlock > 65535 ||
      (p.channels_last_rows > 0 && p.feat % p.channels_last_rows != 0)) {
    return absl::InvalidArgumentError(
        "LaunchStatsPool: bad buffers or sizes (time must be 1..1024, feat "
        "at most 8388480)");
  }
  const int groups = (p.masks_per_item + kMasksPerBlock - 1) / kMasksPerBlock;
  const dim3 grid(
      static_cast<unsigned>(p.batch * groups),
      static_cast<unsigned>((p.feat + kFeatPerBlock - 1) / kFeatPerBlock));
  StatsPoolKernel<<<grid, kFeatPerBlock, 0, stream>>>(
      p.features, p.masks, p.stats, p.masks_per_item, groups, p.feat, p.time,
      p.mask_frames, p.channels_last_rows);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("StatsPoolKernel launch failed: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
