// The security flags of the server, turned into what GrpcServer needs: the
// port's credentials (TLS, mTLS, local or plaintext), the token store with
// its processor attached, and whether reflection is served.
#ifndef DIARIZATION_SERVER_AUTH_PORT_SECURITY_H_
#define DIARIZATION_SERVER_AUTH_PORT_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "server/auth/server_credentials.h"
#include "server/auth/token_store.h"

namespace diarization::server::auth {

struct SecurityFlags {
  std::string listen;
  TlsFiles tls;  // tls.refresh_s also paces the token file's re-reads
  // The token file (token_file.h); empty: no token auth.
  std::string auth_tokens;
  // "auto" (on without tokens, off with them), "on" or "off".
  std::string reflection = "auto";
};

struct PortSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::shared_ptr<TokenStore> tokens;  // null: token auth off
  bool reflection = true;
  // One line for the start-up log: "mutual TLS, tokens (3), reflection off".
  std::string summary;
};

// INVALID_ARGUMENT naming the flag at fault.
absl::StatusOr<PortSecurity> MakePortSecurity(const SecurityFlags& flags);

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_PORT_SECURITY_H_
