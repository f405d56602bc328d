// Conversions between the API's messages and the engine's types: validated
// config → engine job options and decoder format; engine results → the
// API's DiarizeResult / PartialResult.
#ifndef DIARIZATION_SERVER_RESULT_CONVERT_H_
#define DIARIZATION_SERVER_RESULT_CONVERT_H_

#include <vector>

#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "engine/runtime/engine.h"
#include "server/request_validation.h"

namespace diarization::server {

// The engine job for a validated config. `deadline` is the earlier of the
// client's deadline and the stream-duration limit (InfiniteFuture: none).
runtime::JobOptions ToJobOptions(const ValidatedConfig& config,
                                 absl::Time deadline);

// The raw PCM format of a validated config (not for ENCODED).
audio::PcmFormat ToPcmFormat(const ValidatedConfig& config);

// Decoder limits: the service's sample-rate/channel bounds and
// max_audio_s_per_request.
audio::DecodeLimits ToDecodeLimits(const ServiceLimits& limits);

// Fills `out` from a finished job: the view the config asks for
// (regular/exclusive), RTTM text, centroids when asked, timings.
void FillResult(const runtime::JobResult& result, const ValidatedConfig& config,
                v1::DiarizeResult* out);

// Fills `out` from a provisional clustering; `provisional` is always true.
void FillPartial(const runtime::PartialResult& partial,
                 const ValidatedConfig& config, v1::PartialResult* out);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_RESULT_CONVERT_H_
