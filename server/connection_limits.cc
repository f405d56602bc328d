#include "server/connection_limits.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"

namespace diarization::server {
namespace {

int Millis(double seconds) {
  const double ms = std::round(seconds * 1000.0);
  return ms >= std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                               : static_cast<int>(ms);
}

}  // namespace

absl::Status ValidateConnectionLimits(const ConnectionLimits& l) {
  auto positive = [](double v, const char* name) -> absl::Status {
    if (v > 0.0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is ", v, "; it must be > 0"));
  };
  auto non_negative = [](double v, const char* name) -> absl::Status {
    if (v >= 0.0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is ", v, "; it must be >= 0 (0 = never)"));
  };
  for (absl::Status s :
       {positive(l.keepalive_time_s, "keepalive_time_s"),
        positive(l.keepalive_timeout_s, "keepalive_timeout_s"),
        non_negative(l.keepalive_min_client_interval_s,
                     "keepalive_min_client_interval_s"),
        non_negative(l.max_connection_idle_s, "max_connection_idle_s"),
        non_negative(l.max_connection_age_s, "max_connection_age_s"),
        non_negative(l.max_connection_age_grace_s,
                     "max_connection_age_grace_s")}) {
    if (!s.ok()) return s;
  }
  if (l.max_metadata_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_metadata_bytes is ", l.max_metadata_bytes,
                     "; it must be >= 1024 (a call's headers and token)"));
  }
  if (l.max_streams_per_connection < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_streams_per_connection is ", l.max_streams_per_connection,
        "; it must be >= 0 (0 = gRPC's default)"));
  }
  return absl::OkStatus();
}

void ApplyConnectionLimits(const ConnectionLimits& l,
                           grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             Millis(l.keepalive_time_s));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Millis(l.keepalive_timeout_s));
  // Streams may be idle between messages for long; pings keep NAT and load
  // balancers from dropping them.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      Millis(l.keepalive_min_client_interval_s));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  if (l.max_connection_idle_s > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               Millis(l.max_connection_idle_s));
  }
  if (l.max_connection_age_s > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               Millis(l.max_connection_age_s));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               Millis(l.max_connection_age_grace_s));
  }
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, l.max_metadata_bytes);
  if (l.max_streams_per_connection > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               l.max_streams_per_connection);
  }
}

}  // namespace diarization::server
