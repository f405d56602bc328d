// What the clustering needs of the binarized segmentations alone (pipeline.md
// §4, §6, §7.1): the speaker count, the inactive (window, speaker) pairs and
// the pairs that are active in enough clean frames to train the clustering.
// None of it needs an embedding, so a caller that holds the whole
// segmentation while the embeddings are still running (the offline pass,
// engine/runtime/offline_networks.h) makes it then, off the critical path,
// and hands it to Diarize (diarization.h); Diarize makes it itself
// otherwise. Either way the same functions run on the same values, so the
// result does not depend on who made it.
#ifndef DIARIZATION_ENGINE_PIPELINE_SEGMENTATION_SUMMARY_H_
#define DIARIZATION_ENGINE_PIPELINE_SEGMENTATION_SUMMARY_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/pipeline/config.h"
#include "engine/pipeline/train_filter.h"
#include "engine/pipeline/windows.h"

namespace diarization::pipeline {

struct SegmentationSummary {
  int num_windows = 0;
  FrameGrid grid;              // ComputeFrameGrid at config.step_samples
  std::vector<uint8_t> count;  // (F) SpeakerCount, before any max cap
  std::vector<bool> inactive;  // (C × 3) InactiveSpeakers
  TrainSet clean;              // CleanActivePairs (before the NaN check)
};

// segmentations: (C × 589 × 3), 0/1 (the hard powerset decode).
// InvalidArgument, with the reason, for num_windows <= 0, another size,
// step_samples <= 0 or a value other than 0 and 1.
absl::StatusOr<SegmentationSummary> SummarizeSegmentation(
    std::span<const float> segmentations, int num_windows,
    const PipelineConfig& config);

// Whether a summary a caller hands on has the shape of one made for
// `num_windows` windows (num_windows > 0; the grid, count and inactive
// pairs sized to match): InvalidArgument otherwise. It cannot tell whether
// the summary is of the very segmentations it is handed with.
absl::Status CheckSummaryShape(const SegmentationSummary& summary,
                               int num_windows);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SEGMENTATION_SUMMARY_H_
