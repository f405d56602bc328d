// Which (window, local speaker) embeddings train the clustering (pipeline.md
// §7.1; pyannote BaseClustering.filter_embeddings, min_active_ratio 0.2).
// Exact integer arithmetic on the 0/1 segmentation.
#ifndef DIARIZATION_ENGINE_PIPELINE_TRAIN_FILTER_H_
#define DIARIZATION_ENGINE_PIPELINE_TRAIN_FILTER_H_

#include <span>
#include <vector>

namespace diarization::pipeline {

struct TrainSet {
  std::vector<int> window_idx;  // row-major order (np.where)
  std::vector<int> speaker_idx;
  int size() const { return static_cast<int>(window_idx.size()); }
};

// Keeps (c, s) when the speaker is alone in at least 0.2 · 589 frames of the
// window and its embedding has no NaN. segmentations (C × 589 × 3),
// embeddings (C × 3 × 256). The two halves follow: the first needs the
// segmentation only (segmentation_summary.h makes it early).
TrainSet FilterTrainEmbeddings(std::span<const float> segmentations,
                               std::span<const float> embeddings,
                               int num_windows, double min_active_ratio = 0.2);

// The pairs whose speaker is alone in at least min_active_ratio · 589 frames
// of the window, in row-major order.
TrainSet CleanActivePairs(std::span<const float> segmentations, int num_windows,
                          double min_active_ratio = 0.2);

// The pairs of `pairs` whose embedding (C × 3 × 256) has no NaN, in order.
TrainSet KeepFiniteEmbeddings(const TrainSet& pairs,
                              std::span<const float> embeddings);

// inactive[c·3 + s] ⇔ Σ_f seg[c, f, s] == 0 (pipeline.md §6).
std::vector<bool> InactiveSpeakers(std::span<const float> segmentations,
                                   int num_windows);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_TRAIN_FILTER_H_
