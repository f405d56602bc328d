// CreateVoiceprint's own steps around the DiarizeFile path it shares
// (diarize_file_reactor.h): the speech ranges that select the speaker's
// audio, and the voiceprint made from the recording's diarization
// (engine/pipeline/voiceprint.h).
#ifndef DIARIZATION_SERVER_VOICEPRINT_CALL_H_
#define DIARIZATION_SERVER_VOICEPRINT_CALL_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/runtime/engine.h"

namespace diarization::server {

// Most CreateVoiceprintRequest.speech ranges.
inline constexpr int kMaxSpeechRanges = 1000;

// INVALID_ARGUMENT for too many ranges, a non-finite or negative start, or
// an end not after its start.
absl::Status ValidateSpeechRanges(const v1::CreateVoiceprintRequest& request);

// The samples (16 kHz) of the request's ranges, joined in the given order;
// all of them when there are none. A range is clipped to the audio's end;
// INVALID_ARGUMENT when one starts at or past it.
absl::StatusOr<std::vector<float>> SelectSpeech(
    std::vector<float>&& samples, const v1::CreateVoiceprintRequest& request);

// The voiceprint of the diarized recording's dominant speaker, tagged with
// the embedding weights' hash. FAILED_PRECONDITION (with the measured
// figures) when there is too little speech or no single dominant speaker.
absl::Status FillVoiceprint(const runtime::JobResult& result,
                            std::string_view embedding_sha256,
                            v1::Voiceprint* out);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_VOICEPRINT_CALL_H_
