#include <string>

#include "kernels/stats_pool.h"

namespace diarization::kernels {
namespace {

constexpr int kMaxTime = 1024;

// One block per (item, mask); threads stride over features.
__global__ void StatsPoolKernel(const float* __restrict__ features,
                                const float* __restrict__ masks,
                                float* __restrict__ stats, int masks_per_item,
                                int feat, int time, int mask_frames,
                                int cl_rows) {
  __shared__ float w[kMaxTime];
  __shared__ float denoms[2];
  const int64_t pair = blockIdx.x;
  const int64_t item = pair / masks_per_item;
  const float* mask = masks + pair * mask_frames;
  const float scale =
      static_cast<float>(mask_frames) / static_cast<float>(time);
  for (int j = threadIdx.x; j < time; j += blockDim.x) {
    int idx = static_cast<int>(floorf(static_cast<float>(j) * scale));
    if (idx > mask_frames - 1) idx = mask_frames - 1;
    w[j] = mask[idx];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double s1 = 0.0, s2 = 0.0;
    for (int j = 0; j < time; ++j) {
      s1 += w[j];
      s2 += static_cast<double>(__fmul_rn(w[j], w[j]));
    }
    const float v1 = __fadd_rn(static_cast<float>(s1), 1e-8f);
    const float v2 = static_cast<float>(s2);
    denoms[0] = v1;
    denoms[1] = __fadd_rn(__fsub_rn(v1, __fdiv_rn(v2, v1)), 1e-8f);
  }
  __syncthreads();
  const float v1 = denoms[0];
  const float var_denom = denoms[1];
  float* out = stats + pair * 2 * static_cast<int64_t>(feat);
  for (int k = threadIdx.x; k < feat; k += blockDim.x) {
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
    double swx = 0.0;
    for (int j = 0; j < time; ++j)
      swx += static_cast<double>(__fmul_rn(x[j * stride], w[j]));
    const float mean = __fdiv_rn(static_cast<float>(swx), v1);
    double sdx = 0.0;
    for (int j = 0; j < time; ++j) {
      const float d = __fsub_rn(x[j * stride], mean);
      sdx += static_cast<double>(__fmul_rn(__fmul_rn(d, d), w[j]));
    }
    const float var = __fdiv_rn(static_cast<float>(sdx), var_denom);
    out[f] = mean;
    out[feat + f] = sqrtf(var);
  }
}

}  // namespace

absl::Status LaunchStatsPool(const StatsPoolParams& p, cudaStream_t stream) {
  if (p.features == nullptr || p.masks == nullptr || p.stats == nullptr ||
      p.batch <= 0 || p.masks_per_item <= 0 || p.feat <= 0 || p.time <= 0 ||
      p.time > kMaxTime || p.mask_frames <= 0 || p.channels_last_rows < 0 ||
      (p.channels_last_rows > 0 && p.feat % p.channels_last_rows != 0)) {
    return absl::InvalidArgumentError(
        "LaunchStatsPool: bad buffers or sizes (time must be 1..1024)");
  }
  StatsPoolKernel<<<static_cast<unsigned>(p.batch * p.masks_per_item), 256, 0,
                    stream>>>(p.features, p.masks, p.stats, p.masks_per_item,
                              p.feat, p.time, p.mask_frames,
                              p.channels_last_rows);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("StatsPoolKernel launch failed: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
