// Transport hygiene for the gRPC server: keepalive, connection idle/age
// limits (so clients behind a headless Service re-resolve and rebalance) and
// a per-connection stream limit (so one connection cannot hold every call
// slot). Flags in main.cc, docs/operations.md.
#ifndef DIARIZATION_SERVER_CONNECTION_LIMITS_H_
#define DIARIZATION_SERVER_CONNECTION_LIMITS_H_

#include "absl/status/status.h"
#include "grpcpp/server_builder.h"

namespace diarization::server {

struct ConnectionLimits {
  // Server pings an idle-looking connection this often (GRPC_ARG_KEEPALIVE_
  // TIME_MS) and drops it when the ping is unanswered for keepalive_timeout_s.
  double keepalive_time_s = 60.0;
  double keepalive_timeout_s = 20.0;
  // Clients may ping no more often than this (pings without data otherwise
  // count as abuse and the connection is closed with ENHANCE_YOUR_CALM).
  double keepalive_min_client_interval_s = 10.0;
  // A connection without calls for this long is closed (GOAWAY). 0 = never.
  double max_connection_idle_s = 300.0;
  // A connection is asked to go away after this long (GOAWAY) so clients
  // reconnect and rebalance across replicas; calls still open get
  // max_connection_age_grace_s to finish. 0 = never.
  double max_connection_age_s = 0.0;
  double max_connection_age_grace_s = 3600.0;
  // Streams open at once on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_
  // STREAMS); more wait in the client. 0 = gRPC's default (unbounded).
  int max_streams_per_connection = 16;
  // Largest request header list (GRPC_ARG_MAX_METADATA_SIZE, advertised as
  // SETTINGS_MAX_HEADER_LIST_SIZE); a call over it is refused. gRPC 1.51
  // still reads an endless CONTINUATION sequence to its end (CVE-2023-33953):
  // docs/operations.md says which proxy closes such a connection.
  int max_metadata_bytes = 8192;
};

absl::Status ValidateConnectionLimits(const ConnectionLimits& limits);

// Sets the channel arguments on `builder`.
void ApplyConnectionLimits(const ConnectionLimits& limits,
                           grpc::ServerBuilder& builder);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_CONNECTION_LIMITS_H_
