// The client side of the server's security (docs/operations.md,
// "Security"): TLS or mutual TLS channel credentials and the bearer token
// sent with every call.
#ifndef DIARIZATION_CLIENTS_CLI_CHANNEL_SECURITY_H_
#define DIARIZATION_CLIENTS_CLI_CHANNEL_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace diarization::client {

struct ChannelSecurity {
  // TLS with the system's CA roots (implied by any tls_* file below).
  bool tls = false;
  std::string tls_ca;    // PEM roots to trust instead of the system's
  std::string tls_cert;  // PEM client certificate (mutual TLS)
  std::string tls_key;   // its PEM private key
  // Name checked against the server certificate instead of the target's
  // host (e.g. the Service's DNS name when dialing a pod IP).
  std::string tls_server_name;
  std::string token;       // sent as "authorization: Bearer <token>"
  std::string token_file;  // or read from this file (first line)

  bool uses_tls() const {
    return tls || !tls_ca.empty() || !tls_cert.empty() || !tls_key.empty();
  }
};

// A channel to `target` with these credentials. The token goes into every
// call's metadata through a client interceptor, so it also reaches a
// plaintext loopback server (gRPC refuses call credentials on plaintext).
// INVALID_ARGUMENT for unreadable files or a cert without its key.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& target, const ChannelSecurity& security,
    grpc::ChannelArguments args);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_CHANNEL_SECURITY_H_
