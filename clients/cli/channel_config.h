// The gRPC service config a client uses to spread calls over several
// replicas (deploy/k8s: a headless Service, one address per ready pod):
// round_robin over every resolved address, client-side health checking
// (grpc.health.v1 Watch on each connection, so a replica that drains and
// reports NOT_SERVING stops getting new calls at once), and a retry of
// UNAVAILABLE for the moment between a replica's SIGTERM and the client
// seeing its health change. A retried call is one the server refused before
// it accepted any work (it answers UNAVAILABLE when draining), so a retry
// repeats nothing. gRPC retries a call only while its request fits the retry
// buffer (256 KiB by default) and no response has arrived.
#ifndef DIARIZATION_CLIENTS_CLI_CHANNEL_CONFIG_H_
#define DIARIZATION_CLIENTS_CLI_CHANNEL_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"

namespace diarization::client {

// The service name whose health the servers report (server/service_state.cc
// sets it with the overall "" status).
inline constexpr char kHealthServiceName[] = "diarization.v1.Diarization";

// round_robin + healthCheckConfig + retryPolicy, as described above.
std::string RoundRobinServiceConfig();

// The service config JSON for the CLI's flags: `service_config` when set
// (used as given; gRPC validates it when the channel is made), else the
// built-in one for `lb_policy` ("round_robin"), else "" (gRPC's default,
// pick_first: one connection, no health checking). INVALID_ARGUMENT for an
// unknown policy.
absl::StatusOr<std::string> ServiceConfigFor(const std::string& lb_policy,
                                             const std::string& service_config);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_CHANNEL_CONFIG_H_
