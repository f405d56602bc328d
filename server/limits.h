// The service's limits (flags in main.cc, reported by GetInfo, enforced by the
// reactors and the validation in request_validation.h). Each limit that is
// reached fails the call with a message naming the value and the limit.
#ifndef DIARIZATION_SERVER_LIMITS_H_
#define DIARIZATION_SERVER_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::server {

struct ServiceLimits {
  // Largest gRPC message either way (the unary DiarizeFile request carries a
  // whole file, so this bounds unary audio too).
  int64_t max_message_bytes = 64 << 20;
  // Longest audio one request may carry (unary or streamed), in seconds.
  double max_audio_s_per_request = 4.0 * 3600.0;
  // Longest wall-clock life of a Diarize stream, in seconds.
  double max_stream_duration_s = 4.0 * 3600.0;
  // Diarize streams and DiarizeFile calls open at the same time.
  int max_concurrent_streams = 64;
  // Of those, calls one connection (gRPC's peer, address and port) may
  // hold at once; 0 = no limit. gRPC counts a connection's open streams
  // itself (max_streams_per_connection), but a stream the client resets is
  // off its count at once and on ours until the call's cancellation runs:
  // under a reset flood one connection held every slot (issue 39). The
  // server sets it to max_streams_per_connection.
  int max_calls_per_connection = 0;
  // Admission control in the engine: audio seconds accepted but not yet
  // processed, over all requests (0 = the engine's default).
  double max_backlog_audio_s = 3600.0;
  int min_sample_rate_hz = 8000;
  int max_sample_rate_hz = 192000;
  int max_channel_count = 32;
  // Speaker hints above this are refused (clustering cost grows with it and
  // no meeting needs more).
  int max_speakers = 64;
  // A Diarize stream must send its config within this many seconds of its
  // start (DEADLINE_EXCEEDED otherwise): an idle call holds a slot.
  double config_timeout_s = 10.0;
  // Flow control: a stream's next message is not read while its job holds
  // more than this many seconds of audio not yet through the networks; reads
  // resume at ResumeBacklogS. Slows a fast sender through gRPC flow control
  // instead of failing it. At least kMinStreamHighWaterS: a stream's newest
  // audio (its unfinished 10 s window) stays in its backlog until more
  // audio arrives, so a lower mark could never be reached again.
  double stream_backlog_high_water_s = 60.0;
  // CPU seconds one DiarizeFile decode may use (RESOURCE_EXHAUSTED past it);
  // 0 = unbounded.
  double max_decode_cpu_s = 60.0;
  // A response (a message, or the final status) that the client has not
  // taken within this many seconds ends the call (issue 39): a client that
  // stops reading (HTTP/2 window 0) would otherwise hold its call slot for
  // ever, past max_stream_duration_s, since a write that never completes
  // blocks every later one. The bound is also cut at the stream's
  // max_stream_duration_s.
  double write_timeout_s = 30.0;
  // Partial results no more often than this many seconds of audio.
  double min_partial_interval_s = 1.0;
  double default_partial_interval_s = 5.0;
};

inline constexpr double kMinStreamHighWaterS = 20.0;

// The low-water mark where a held stream's reads resume: half the high-water
// mark, but never below 12 s (a window and a bit, see above).
inline double ResumeBacklogS(const ServiceLimits& limits) {
  const double half = limits.stream_backlog_high_water_s / 2;
  return half > 12.0 ? half : 12.0;
}

// Checks that the limits themselves make sense (positive, ordered), for flag
// validation at start-up.
absl::Status ValidateLimits(const ServiceLimits& limits);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_LIMITS_H_
