// The CLI's voiceprint files and --known list. A voiceprint file holds one
// serialized diarization.v1.Voiceprint message (binary protobuf), as
// CreateVoiceprint returned it.
#ifndef DIARIZATION_CLIENTS_CLI_VOICEPRINTS_H_
#define DIARIZATION_CLIENTS_CLI_VOICEPRINTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"

namespace diarization::client {

absl::Status WriteVoiceprint(const v1::Voiceprint& voiceprint,
                             const std::string& path);
absl::StatusOr<v1::Voiceprint> ReadVoiceprint(const std::string& path);

// "LABEL=PATH" entries → known speakers (INVALID_ARGUMENT naming the bad
// entry or file).
absl::StatusOr<std::vector<v1::KnownSpeaker>> LoadKnownSpeakers(
    const std::vector<std::string>& entries);

// "START-END" entries in seconds → time ranges.
absl::StatusOr<std::vector<v1::TimeRange>> ParseSpeechRanges(
    const std::vector<std::string>& entries);

// One line per output speaker: "identity SPEAKER best=LABEL score=S
// matched|unmatched".
std::string FormatIdentities(const v1::DiarizeResult& result);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_VOICEPRINTS_H_
