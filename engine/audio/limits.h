// Limit checks shared by the decoders (internal to engine/audio).
#ifndef DIARIZATION_ENGINE_AUDIO_LIMITS_H_
#define DIARIZATION_ENGINE_AUDIO_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/audio/audio.h"

namespace diarization::audio {

// Checks a sample rate and channel count against the limits.
absl::Status ValidateRateAndChannels(int sample_rate_hz, int channel_count,
                                     const DecodeLimits& limits);

// OK when `channel_index` is kDownmix or one of `channel_count` channels.
absl::Status ValidateChannelIndex(int channel_index, int channel_count);

// Most input frames accepted at `sample_rate_hz`.
int64_t MaxFrames(const DecodeLimits& limits, int sample_rate_hz);

// OK while `control` allows the decode to go on; else CANCELLED,
// DEADLINE_EXCEEDED or RESOURCE_EXHAUSTED (CPU budget) with the reason.
// `cpu_start_s` is ThreadCpuSeconds() when the decode began.
absl::Status CheckDecodeControl(const DecodeControl& control,
                                double cpu_start_s);

// CPU seconds used by the calling thread.
double ThreadCpuSeconds();

// The "too long" error for `frames` input frames.
absl::Status TooLongError(int64_t frames, int sample_rate_hz,
                          const DecodeLimits& limits);

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_LIMITS_H_
