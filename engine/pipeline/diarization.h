// The host pipeline between and after the networks, as pyannote's
// speaker-diarization-community-1 runs it (../shared/specs/pipeline.md).
//
// Stages in order: ComputeWindows (§2, windows.h) → [segmentation network] →
// PowersetToMultilabel (§3, powerset.h) → EmbeddingMasks (§5,
// embedding_masks.h) → [embedding network] → Diarize (§4, §6–§12: count,
// filter, AHC, PLDA, VBx, assignment, reconstruction, segments). The PLDA
// model comes from engine/io/plda_files.h (BuildPlda in plda.h takes its
// arrays). Deterministic; float64 where pyannote uses it. This header is
// the facade the runtime includes; each stage has its own file pair.
#ifndef DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_
#define DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/clustering.h"
#include "engine/pipeline/config.h"
#include "engine/pipeline/embedding_masks.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/powerset.h"
#include "engine/pipeline/reconstruction.h"
#include "engine/pipeline/rttm.h"
#include "engine/pipeline/segmentation_summary.h"
#include "engine/pipeline/windows.h"

namespace diarization::pipeline {

struct DiarizationOutput {
  // Regular view (overlap allowed), sorted by (start, end, label).
  std::vector<Segment> segments;
  // Exclusive view (at most one speaker at a time).
  std::vector<Segment> exclusive_segments;
  // Output labels in order (SPEAKER_00, ...).
  std::vector<std::string> labels;
  // One 256-d centroid per label (zero for padded speakers).
  std::vector<std::vector<float>> centroids;
};

// Every intermediate of Diarize, for tests, tools and debugging.
struct DiarizationDetails {
  FrameGrid grid;
  std::vector<uint8_t> count;   // (F) before the max_speakers cap
  ClusteringResult clustering;  // train set, AHC, PLDA, VBx, soft/hard
  std::vector<int> hard;        // (C × 3) after the inactive → −2 override
  DiscreteDiarization discrete;   // regular
  DiscreteDiarization exclusive;  // count capped at 1
  DiarizationOutput output;
  // Wall seconds (steady clock) of the steps around the clustering (whose
  // own steps are in clustering.times), for benchmarks.
  double count_s = 0.0;  // input checks and the segmentation summary
                         // (count, inactive and clean pairs): ~0 when the
                         // caller gave the summary
  double reconstruction_s = 0.0;  // aggregation, binarisation, segments
};

// (§4, §6–§12) Everything after the networks. segmentations: (C × 589 × 3)
// 0/1; embeddings: (C × 3 × 256). Errors: InvalidArgument for inconsistent
// shapes or contradictory hints. `ahc`: the linkage's options (its
// accelerator, engine/models/cuda_linkage.h). `summary`: null, or
// SummarizeSegmentation(segmentations, num_windows, config) made by the
// caller earlier (segmentation_summary.h; it must be of these very
// segmentations: only its shape is checked here). The result is the same
// either way.
absl::StatusOr<DiarizationOutput> Diarize(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const PipelineConfig& config,
    const SpeakerHints& hints, const AhcOptions& ahc = {},
    const SegmentationSummary* summary = nullptr);

// Diarize with all intermediates; `uri` is written into the segments.
absl::StatusOr<DiarizationDetails> DiarizeDetailed(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const PipelineConfig& config,
    const SpeakerHints& hints, const std::string& uri = "",
    const AhcOptions& ahc = {}, const SegmentationSummary* summary = nullptr);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_
