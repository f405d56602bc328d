// Known-speaker identification at the API's edge: the voiceprints a client
// sends (DiarizationConfig.known_speakers) checked against the loaded
// embedding model and turned into the pipeline's KnownSpeaker list, and
// voiceprints encoded for CreateVoiceprint. The matching itself is
// engine/pipeline/identify.h (docs/adr/0091).
#ifndef DIARIZATION_SERVER_IDENTIFICATION_H_
#define DIARIZATION_SERVER_IDENTIFICATION_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/pipeline/identify.h"
#include "server/service_state.h"

namespace diarization::server {

// Most known speakers per call (GetInfo's limits.max_known_speakers): the
// score matrix and its assignment stay far below a millisecond.
inline constexpr int kMaxKnownSpeakers = 64;
// Voiceprint.version this server writes and reads.
inline constexpr int kVoiceprintVersion = 1;

struct Identification {
  std::vector<pipeline::KnownSpeaker> known;
  double threshold = pipeline::kDefaultIdentificationThreshold;
};

// The loaded embedding model's SHA-256 (GetInfo's "embedding" model), or
// empty while none is loaded.
std::string EmbeddingModelSha256(const ServiceState& state);

// Checks config.known_speakers and identification_threshold. Errors:
// INVALID_ARGUMENT for too many speakers, a bad or duplicate label, a
// voiceprint of the wrong length, version or with a non-finite value, or a
// threshold outside [-1, 1]; FAILED_PRECONDITION for a voiceprint made by
// other embedding weights (naming both hashes). `dim`: the embedding
// network's dimension.
absl::StatusOr<Identification> ValidateIdentification(
    const v1::DiarizationConfig& config, std::string_view embedding_sha256,
    int dim);

// float32 little-endian bytes, as Voiceprint.embedding holds them.
std::string EncodeEmbedding(std::span<const float> values);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_IDENTIFICATION_H_
