// The credentials of the gRPC port, from the security flags:
//   --tls_cert + --tls_key: TLS, served by gRPC's
//   FileWatcherCertificateProvider,
//     which re-reads the files every `refresh_s` seconds, so a rotated
//     certificate (cert-manager, a Secret update) is used by new connections
//     without a restart;
//   + --tls_client_ca: mutual TLS, clients must present a certificate that
//     chains to this CA (re-read the same way);
//   no TLS but a token processor: gRPC local credentials (LOCAL_TCP), which
//     admit loopback peers only, speak plaintext on the wire and let the
//     processor run; a non-loopback listen address is refused (bearer tokens
//     would cross the network in clear);
//   neither: plaintext, with a warning logged unless the address is loopback.
#ifndef DIARIZATION_SERVER_AUTH_SERVER_CREDENTIALS_H_
#define DIARIZATION_SERVER_AUTH_SERVER_CREDENTIALS_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/server_credentials.h"

namespace diarization::server::auth {

struct TlsFiles {
  std::string cert;       // PEM certificate chain, leaf first
  std::string key;        // PEM private key
  std::string client_ca;  // PEM CA bundle; set: client certificates required
  // How often the files are re-read, seconds (>= 1).
  int refresh_s = 60;

  bool enabled() const { return !cert.empty() || !key.empty(); }
};

// Whether host:port names a loopback host (127.0.0.0/8, ::1, localhost).
bool IsLoopbackListen(std::string_view listen);

// Checks that the files exist, parse as PEM and that the key matches the
// certificate (gRPC would only fail at the first handshake).
// INVALID_ARGUMENT naming the flag.
absl::Status CheckTlsFiles(const TlsFiles& tls);

// The credentials for `listen`, with `processor` (may be null: no token
// auth) attached. Logs a warning for plaintext on a non-loopback address.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& tls, std::string_view listen,
    std::shared_ptr<grpc::AuthMetadataProcessor> processor);

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_SERVER_CREDENTIALS_H_
