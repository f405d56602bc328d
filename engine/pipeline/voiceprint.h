// A voiceprint from the diarization of one speaker's recording: the
// centroid of its dominant speaker, the same quantity identification
// scores output speakers by (identify.h), so enrolment and identification
// compare like with like (docs/adr/0091).
#ifndef DIARIZATION_ENGINE_PIPELINE_VOICEPRINT_H_
#define DIARIZATION_ENGINE_PIPELINE_VOICEPRINT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/segment.h"

namespace diarization::pipeline {

struct VoiceprintRules {
  // The dominant speaker's speech (exclusive view) must reach this.
  double min_speech_s = 3.0;
  // ... and be at least this share of all speech (exclusive view).
  double min_dominant_share = 2.0 / 3.0;
};

struct VoiceprintEmbedding {
  std::vector<float> embedding;
  double speech_s = 0.0;
};

// From a diarization's output (DiarizationOutput's exclusive segments,
// labels and centroids). FAILED_PRECONDITION, with the measured seconds
// and shares, when the dominant speaker has too little speech, too small a
// share of it, or no centroid (no clean speech to embed).
absl::StatusOr<VoiceprintEmbedding> DominantSpeakerVoiceprint(
    const std::vector<Segment>& exclusive_segments,
    const std::vector<std::string>& labels,
    const std::vector<std::vector<float>>& centroids,
    const VoiceprintRules& rules = {});

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_VOICEPRINT_H_
