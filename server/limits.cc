#include "server/limits.h"

#include "absl/strings/str_cat.h"

namespace diarization::server {

absl::Status ValidateLimits(const ServiceLimits& l) {
  if (l.max_message_bytes < 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_message_bytes is ", l.max_message_bytes, "; it must be >= 4096"));
  }
  if (l.max_message_bytes > (int64_t{2047} << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes is ", l.max_message_bytes,
                     "; gRPC allows at most 2047 MiB"));
  }
  if (!(l.max_audio_s_per_request > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_audio_s_per_request is ", l.max_audio_s_per_request,
                     "; it must be > 0"));
  }
  if (!(l.max_stream_duration_s > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat("max_stream_duration_s is ",
                                                   l.max_stream_duration_s,
                                                   "; it must be > 0"));
  }
  if (l.max_concurrent_streams < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_concurrent_streams is ",
                                                   l.max_concurrent_streams,
                                                   "; it must be >= 1"));
  }
  if (l.max_calls_per_connection < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_calls_per_connection is ", l.max_calls_per_connection,
                     "; it must be >= 0 (0 = no limit)"));
  }
  if (!(l.max_backlog_audio_s >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_backlog_audio_s is ", l.max_backlog_audio_s,
                     "; it must be >= 0 (0 = engine default)"));
  }
  if (!(l.config_timeout_s > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config_timeout_s is ", l.config_timeout_s, "; it must be > 0"));
  }
  if (!(l.write_timeout_s > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "write_timeout_s is ", l.write_timeout_s, "; it must be > 0"));
  }
  if (!(l.stream_backlog_high_water_s >= kMinStreamHighWaterS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stream_backlog_high_water_s is ", l.stream_backlog_high_water_s,
        "; it must be >= ", kMinStreamHighWaterS,
        " s (a stream's unfinished window stays in its backlog)"));
  }
  if (!(l.max_decode_cpu_s >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_decode_cpu_s is ", l.max_decode_cpu_s,
                     "; it must be >= 0 (0 = unbounded)"));
  }
  if (l.min_sample_rate_hz < 1 || l.max_sample_rate_hz < l.min_sample_rate_hz) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample rate range [", l.min_sample_rate_hz, ", ",
                     l.max_sample_rate_hz, "] is empty or not positive"));
  }
  if (l.max_channel_count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_channel_count is ", l.max_channel_count, "; it must be >= 1"));
  }
  return absl::OkStatus();
}

}  // namespace diarization::server
