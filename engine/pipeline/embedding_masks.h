// Pooling weights for the embedding network (pipeline.md §5; pyannote
// SpeakerDiarization.get_embeddings, exclude_overlap=True in community-1).
// Exact 0/1 arithmetic. Also the whole host step between the two networks
// for one window (WindowMasks), which the engine's device worker and the
// offline networks pass both run.
#ifndef DIARIZATION_ENGINE_PIPELINE_EMBEDDING_MASKS_H_
#define DIARIZATION_ENGINE_PIPELINE_EMBEDDING_MASKS_H_

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "engine/pipeline/config.h"

namespace diarization::pipeline {

// ceil(589 · 400 / 160000): WeSpeaker's minimum of 400 samples in frames.
inline constexpr int kMinEmbeddingFrames = 2;

// Per (window, local speaker) weights, (C × 3 × 589): the overlap-free mask
// when it has more than kMinEmbeddingFrames active frames, otherwise the
// plain segmentation column. Without exclude_overlap, the segmentation.
std::vector<float> EmbeddingMasks(std::span<const float> segmentations,
                                  int num_windows,
                                  const PipelineConfig& config);

// The host step between the networks for one window: `log_probs` (589 × 7
// powerset log-probabilities) → `segmentation` (589 × 3, 0/1;
// PowersetToMultilabel) → `masks` (3 × 589; EmbeddingMasks). INTERNAL when
// a span has another size.
absl::Status WindowMasks(std::span<const float> log_probs,
                         const PipelineConfig& config,
                         std::span<float> segmentation, std::span<float> masks);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_EMBEDDING_MASKS_H_
