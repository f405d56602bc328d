// Discrete diarization from clustered segmentations and the speaker count
// (pipeline.md §9; pyannote SpeakerDiarization.reconstruct and
// SpeakerDiarizationMixin.to_diarization). float32 accumulation, as
// pyannote's `aggregate`; ties in the top-k go to the lower column.
#ifndef DIARIZATION_ENGINE_PIPELINE_RECONSTRUCTION_H_
#define DIARIZATION_ENGINE_PIPELINE_RECONSTRUCTION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "engine/pipeline/windows.h"

namespace diarization::pipeline {

struct DiscreteDiarization {
  int num_frames = 0;
  int num_speakers = 0;     // columns: max(max(hard) + 1, max(count))
  std::vector<float> data;  // (F × columns) 0/1
};

// Σ over windows of max_{s: hard[c,s]=k} seg[c, ·, s] on the frame grid
// (pyannote `aggregate(skip_average=True)`), (F × columns) float32 with
// columns = max(max(hard) + 1, max(count)) (zero-padded).
//
// `threads` (>= 1) split the frames (AggregateActivations, TopSpeakers):
// each frame's sum still adds its windows in ascending order on one thread,
// so the result is the same for every thread count. The pipeline passes
// OpenBLAS's thread count (openblas_threads.h), as its float64 steps use.
struct Activations {
  int num_frames = 0;
  int columns = 0;
  std::vector<float> data;
};
Activations AggregateActivations(std::span<const float> segmentations,
                                 std::span<const int> hard,
                                 std::span<const uint8_t> count,
                                 const FrameGrid& grid, int threads = 1);

// The count[t] most active columns of each frame (ties: lower column).
DiscreteDiarization TopSpeakers(const Activations& activations,
                                std::span<const uint8_t> count,
                                int threads = 1);

// segmentations (C × 589 × 3), hard (C × 3; −2 = dropped), count (F).
DiscreteDiarization Reconstruct(std::span<const float> segmentations,
                                std::span<const int> hard,
                                std::span<const uint8_t> count,
                                const FrameGrid& grid);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_RECONSTRUCTION_H_
