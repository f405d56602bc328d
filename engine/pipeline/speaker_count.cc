#include "engine/pipeline/speaker_count.h"

#include <algorithm>
#include <cmath>

namespace diarization::pipeline {

std::vector<uint8_t> SpeakerCount(std::span<const float> segmentations,
                                  const FrameGrid& grid) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  const int num_windows = static_cast<int>(grid.window_offset.size());
  std::vector<float> sum(grid.num_frames, 0.0f);
  std::vector<float> windows(grid.num_frames, 0.0f);
  std::vector<uint8_t> covered(grid.num_frames, 0);
  for (int c = 0; c < num_windows; ++c) {
    const float* seg = segmentations.data() + static_cast<size_t>(c) * F * S;
    const int o = grid.window_offset[c];
    for (int f = 0; f < F && o + f < grid.num_frames; ++f) {
      // np.sum over speakers (float32), NaN-masked like `aggregate`.
      float local = 0.0f;
      for (int s = 0; s < S; ++s) local += seg[f * S + s];
      const bool valid = !std::isnan(local);
      sum[o + f] += valid ? local : 0.0f;
      windows[o + f] += valid ? 1.0f : 0.0f;
      covered[o + f] |= valid ? 1 : 0;
    }
  }
  std::vector<uint8_t> count(grid.num_frames, 0);
  for (int t = 0; t < grid.num_frames; ++t) {
    if (!covered[t]) continue;  // `missing=0.0`
    const float average = sum[t] / std::max(windows[t], 1e-12f);
    count[t] = static_cast<uint8_t>(std::nearbyint(average));
  }
  return count;
}

}  // namespace diarization::pipeline
