// Instantaneous speaker count (pipeline.md §4; pyannote
// SpeakerDiarizationMixin.speaker_count → Inference.aggregate with
// skip_average=False, then np.rint → uint8). float32 accumulators as
// pyannote; rint rounds half to even.
#ifndef DIARIZATION_ENGINE_PIPELINE_SPEAKER_COUNT_H_
#define DIARIZATION_ENGINE_PIPELINE_SPEAKER_COUNT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "engine/pipeline/windows.h"

namespace diarization::pipeline {

// segmentations: (C × 589 × 3) 0/1. Returns (F) counts; frames no window
// covers get 0.
std::vector<uint8_t> SpeakerCount(std::span<const float> segmentations,
                                  const FrameGrid& grid);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SPEAKER_COUNT_H_
