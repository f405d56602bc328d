#include "engine/pipeline/embedding_masks.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/common/shapes.h"
#include "engine/pipeline/powerset.h"

namespace diarization::pipeline {

std::vector<float> EmbeddingMasks(std::span<const float> segmentations,
                                  int num_windows,
                                  const PipelineConfig& config) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  std::vector<float> masks(static_cast<size_t>(num_windows) * S * F, 0.0f);
  if (segmentations.size() < static_cast<size_t>(num_windows) * F * S)
    return masks;
  const int min_frames =
      config.embedding_exclude_overlap ? kMinEmbeddingFrames : -1;
  for (int c = 0; c < num_windows; ++c) {
    const float* seg = segmentations.data() + static_cast<size_t>(c) * F * S;
    for (int s = 0; s < S; ++s) {
      float* out = masks.data() + (static_cast<size_t>(c) * S + s) * F;
      float clean_sum = 0.0f;
      for (int f = 0; f < F; ++f) {
        // pyannote nan_to_num's the masks; a NaN frame counts as silent.
        const float v = std::isnan(seg[f * S + s]) ? 0.0f : seg[f * S + s];
        float clean = v;
        if (config.embedding_exclude_overlap) {
          float total = 0.0f;
          for (int k = 0; k < S; ++k) total += seg[f * S + k];
          // A NaN total compares false: the frame is not clean (as numpy).
          clean = total < 2.0f ? v : 0.0f;
        }
        out[f] = clean;
        clean_sum += clean;
      }
      if (!(clean_sum > static_cast<float>(min_frames))) {
        for (int f = 0; f < F; ++f) {
          const float v = seg[f * S + s];
          out[f] = std::isnan(v) ? 0.0f : v;
        }
      }
    }
  }
  return masks;
}

absl::Status WindowMasks(std::span<const float> log_probs,
                         const PipelineConfig& config,
                         std::span<float> segmentation,
                         std::span<float> masks) {
  constexpr size_t kLogProbs = size_t{kFramesPerWindow} * kPowersetClasses;
  constexpr size_t kSegmentation = size_t{kFramesPerWindow} * kLocalSpeakers;
  if (log_probs.size() != kLogProbs || segmentation.size() != kSegmentation) {
    return absl::InternalError(absl::StrCat(
        "WindowMasks: one window is ", kLogProbs, " log-probabilities and ",
        kSegmentation, " segmentation values, got ", log_probs.size(), " and ",
        segmentation.size()));
  }
  PowersetToMultilabel(log_probs, segmentation);
  const std::vector<float> weights = EmbeddingMasks(segmentation, 1, config);
  if (weights.size() != masks.size()) {
    return absl::InternalError(
        absl::StrCat("pipeline::EmbeddingMasks returned ", weights.size(),
                     " weights for one window, expected ", masks.size()));
  }
  std::copy(weights.begin(), weights.end(), masks.begin());
  return absl::OkStatus();
}

}  // namespace diarization::pipeline
