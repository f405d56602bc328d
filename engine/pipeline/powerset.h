// Hard powerset → multilabel decoding (pipeline.md §3; pyannote
// utils/powerset.py Powerset.to_multilabel(soft=False)). segmentation-3.0
// has 3 speakers and at most 2 at once: 7 classes {∅, 0, 1, 2, 01, 02, 12}.
// Exact: argmax (first maximum wins, as torch/numpy) then a 0/1 lookup.
#ifndef DIARIZATION_ENGINE_PIPELINE_POWERSET_H_
#define DIARIZATION_ENGINE_PIPELINE_POWERSET_H_

#include <span>

#include "engine/common/shapes.h"

namespace diarization::pipeline {

// The 7×3 mapping of class → active speakers, row-major.
extern const float kPowersetMapping[kPowersetClasses][kLocalSpeakers];

// (§3) log_probs (C × 589 × 7) → segmentations (C × 589 × 3). Works on any
// number of frames: the frame count is log_probs.size() / 7.
void PowersetToMultilabel(std::span<const float> log_probs,
                          std::span<float> segmentations);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_POWERSET_H_
