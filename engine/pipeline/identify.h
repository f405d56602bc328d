// Known-speaker identification, applied to the pipeline's output after it
// (so the pipeline's parity with pyannote does not move): each output
// speaker's centroid is scored against the clients' voiceprints, and output
// speakers are matched one-to-one to known speakers (docs/adr/0091).
//
// The score is the cosine similarity between the speaker's centroid (the
// mean of its training embeddings, DiarizationOutput::centroids) and the
// voiceprint (the same kind of vector, made by CreateVoiceprint from one
// speaker's audio). The matching is the one-to-one assignment that
// maximizes the sum of (score − threshold) over matched pairs; a pair
// scoring below the threshold never matches, so two output speakers that
// both score high against one voiceprint cannot both take its label.
#ifndef DIARIZATION_ENGINE_PIPELINE_IDENTIFY_H_
#define DIARIZATION_ENGINE_PIPELINE_IDENTIFY_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace diarization::pipeline {

// The default cosine threshold (docs/api.md, "Identification": how to pick
// one for your weights and audio).
inline constexpr double kDefaultIdentificationThreshold = 0.5;

// One enrolled speaker: the label it is to carry and its voiceprint, of the
// embedding network's dimension.
struct KnownSpeaker {
  std::string label;
  std::vector<float> embedding;
};

// What identification found for one output speaker.
struct SpeakerIdentity {
  // The known label this speaker was matched to; empty when unmatched.
  std::string matched_label;
  // The best-scoring known speaker and its score, matched or not; empty
  // and 0 when there are no known speakers or the speaker's centroid is
  // all zero (a speaker pyannote padded: it cannot be scored).
  std::string best_label;
  double best_score = 0.0;
};

// Cosine similarity in float64; nullopt when either vector is all zero or
// the sizes differ.
std::optional<double> CosineSimilarity(std::span<const float> a,
                                       std::span<const float> b);

// One entry per centroid, in the centroids' order. `known` labels are
// assumed distinct (the server validates them).
std::vector<SpeakerIdentity> IdentifySpeakers(
    const std::vector<std::vector<float>>& centroids,
    std::span<const KnownSpeaker> known, double threshold);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_IDENTIFY_H_
