#include "engine/pipeline/train_filter.h"

#include <cmath>

#include "engine/pipeline/config.h"

namespace diarization::pipeline {

TrainSet FilterTrainEmbeddings(std::span<const float> segmentations,
                               std::span<const float> embeddings,
                               int num_windows, double min_active_ratio) {
  return KeepFiniteEmbeddings(
      CleanActivePairs(segmentations, num_windows, min_active_ratio),
      embeddings);
}

TrainSet CleanActivePairs(std::span<const float> segmentations, int num_windows,
                          double min_active_ratio) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  TrainSet pairs;
  for (int c = 0; c < num_windows; ++c) {
    const float* seg = segmentations.data() + static_cast<size_t>(c) * F * S;
    float clean[S] = {0.0f, 0.0f, 0.0f};
    for (int f = 0; f < F; ++f) {
      const float total = seg[f * S] + seg[f * S + 1] + seg[f * S + 2];
      if (total != 1.0f) continue;
      for (int s = 0; s < S; ++s) clean[s] += seg[f * S + s];
    }
    for (int s = 0; s < S; ++s) {
      if (!(clean[s] >= min_active_ratio * F)) continue;
      pairs.window_idx.push_back(c);
      pairs.speaker_idx.push_back(s);
    }
  }
  return pairs;
}

TrainSet KeepFiniteEmbeddings(const TrainSet& pairs,
                              std::span<const float> embeddings) {
  constexpr int S = kLocalSpeakers;
  constexpr int D = kEmbeddingDim;
  TrainSet train;
  for (int i = 0; i < pairs.size(); ++i) {
    const int c = pairs.window_idx[i], s = pairs.speaker_idx[i];
    const float* e = embeddings.data() + (static_cast<size_t>(c) * S + s) * D;
    bool valid = true;
    for (int d = 0; d < D; ++d) valid &= !std::isnan(e[d]);
    if (!valid) continue;
    train.window_idx.push_back(c);
    train.speaker_idx.push_back(s);
  }
  return train;
}

std::vector<bool> InactiveSpeakers(std::span<const float> segmentations,
                                   int num_windows) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  std::vector<bool> inactive(static_cast<size_t>(num_windows) * S);
  for (int c = 0; c < num_windows; ++c) {
    const float* seg = segmentations.data() + static_cast<size_t>(c) * F * S;
    for (int s = 0; s < S; ++s) {
      float sum = 0.0f;
      for (int f = 0; f < F; ++f) sum += seg[f * S + s];
      inactive[c * S + s] = sum == 0.0f;
    }
  }
  return inactive;
}

}  // namespace diarization::pipeline
