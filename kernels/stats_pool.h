// Mask-weighted statistics pooling of the WeSpeaker ResNet34 features
// (models.md §4, pyannote StatsPool with TSTP): per (window, mask), the
// 589-frame mask is resampled to the T ResNet frames with torch's nearest
// rule (index = min(floor(j * fl32(589/T)), 588), the product in float32),
// then mean = Σ w x / v1 and std = sqrt(Σ w (x - mean)^2 / (v1 - v2/v1 + 1e-8))
// with v1 = Σ w + 1e-8, v2 = Σ w². Sums are accumulated in float64 and
// rounded to float; the denominators are float32 as in torch, so an
// all-zero mask gives mean = std = 0 and a one-frame mask gives std = 0.
#ifndef DIARIZATION_KERNELS_STATS_POOL_H_
#define DIARIZATION_KERNELS_STATS_POOL_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

struct StatsPoolParams {
  const float* features = nullptr;  // (batch, feat, time)
  const float* masks = nullptr;     // (batch, masks_per_item, mask_frames)
  float* stats = nullptr;  // (batch * masks_per_item, 2 * feat): [mean | std]
  int64_t batch = 0;
  int masks_per_item = 0;
  int feat = 0;
  int time = 0;
  int mask_frames = 0;
  // 0: features are (batch, feat, time). > 0: they are channels-last
  // (batch, rows, time, feat / rows) and feature f is channel f / rows of
  // row f % rows (torch's flattening of (channels, rows)).
  int channels_last_rows = 0;
};
absl::Status LaunchStatsPool(const StatsPoolParams& p, cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_STATS_POOL_H_
