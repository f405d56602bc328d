// Checks a client's DiarizationConfig before any work starts, and turns it
// into the plain settings the reactors use. Every refusal is
// INVALID_ARGUMENT with a message that names the field, the value and the
// rule (docs/api.md, "Validation").
#ifndef DIARIZATION_SERVER_REQUEST_VALIDATION_H_
#define DIARIZATION_SERVER_REQUEST_VALIDATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "server/limits.h"

namespace diarization::server {

enum class RpcKind { kStream, kUnary };

// A config that passed validation; defaults filled in.
struct ValidatedConfig {
  // ENCODED (a container file) or raw PCM; only DiarizeFile takes ENCODED.
  v1::AudioEncoding encoding = v1::LINEAR16;
  int sample_rate_hz = kSampleRateHz;
  int channel_count = 1;
  // audio.channel_policy SELECT_CHANNEL: its channel_index; else
  // audio::kDownmix. For ENCODED, checked against the header at decode.
  int channel_index = audio::kDownmix;
  // audio.channel_policy SEPARATE (DiarizeFile only): one job a channel,
  // merged (server/separate_channels.h).
  bool separate_channels = false;
  int num_speakers = 0;
  int min_speakers = 0;
  int max_speakers = 0;
  bool exclusive = false;
  // options.both_views: the exclusive view too, in its own fields.
  bool both_views = false;
  // options.stable_labels: labels kept across a stream's results.
  bool stable_labels = false;
  bool return_centroids = false;
  bool fast = false;
  bool partial_results = false;
  double partial_interval_s = 5.0;
  // The client's request_id, or one made up by the server.
  std::string request_id;
  std::string uri = "audio";

  // Bytes per interleaved frame of raw PCM (0 for ENCODED).
  int frame_bytes() const;
};

// Validates `config` for a call of kind `kind` under `limits`. For the unary
// call a missing config means ENCODED audio and defaults everywhere.
absl::StatusOr<ValidatedConfig> ValidateConfig(
    const v1::DiarizationConfig& config, RpcKind kind,
    const ServiceLimits& limits);

// Checks a request_id or uri: 1 to 128 printable ASCII characters without
// spaces ('!' to '~'). `field` names it in the error.
absl::Status ValidateToken(const std::string& value, const char* field);

// The raw PCM format of a validated config (not for ENCODED).
audio::PcmFormat ToPcmFormat(const ValidatedConfig& config);

// Decoder limits: the service's sample-rate/channel bounds and
// max_audio_s_per_request.
audio::DecodeLimits ToDecodeLimits(const ServiceLimits& limits);

// A fresh request id: "srv-" and 16 random hex digits.
std::string NewRequestId();

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_REQUEST_VALIDATION_H_
