// Token auth for every gRPC call: a grpc::AuthMetadataProcessor that runs in
// gRPC's server auth filter, before any handler, for every service on the
// port (Diarization, reflection, health). It reads `authorization: Bearer
// <token>` and the call's :path:
//   - grpc.health.v1.Health/*: open (Kubernetes probes carry no token);
//   - no or malformed authorization, or a token not in the file:
//     UNAUTHENTICATED;
//   - a valid token whose "methods" do not list this method (or an unknown
//     method): PERMISSION_DENIED.
// gRPC calls a processor only on secure ports (TLS, or local credentials
// on loopback: server_credentials.h). The header is left in the metadata:
// handlers look the principal up again (principal.h says why).
#ifndef DIARIZATION_SERVER_AUTH_TOKEN_AUTH_H_
#define DIARIZATION_SERVER_AUTH_TOKEN_AUTH_H_

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "server/auth/principal.h"
#include "server/auth/token_store.h"

namespace diarization::server::auth {

// What a :path is, for the token check.
struct PathRule {
  bool open = false;             // needs no token (health)
  std::optional<Method> method;  // empty: not a method of this server
};
PathRule RuleForPath(std::string_view path);

// The token of an `authorization` value "Bearer <token>" (scheme
// case-insensitive, RFC 6750); empty when malformed.
std::string_view BearerToken(std::string_view authorization);

// The decision for one call to `method` (empty: unknown method) with the
// given `authorization` value (nullopt: none sent). The principal on OK.
absl::StatusOr<std::shared_ptr<const Principal>> Authorize(
    const TokenStore& tokens, std::optional<Method> method,
    std::optional<std::string_view> authorization);

class TokenAuthProcessor : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenAuthProcessor(std::shared_ptr<const TokenStore> tokens)
      : tokens_(std::move(tokens)) {}

  // Hashing and a table scan: cheap, run inline on gRPC's thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata,
                       grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  // One log line per refused call, at most kLogBurst a second; the count of
  // those left out goes on the next line.
  void LogRefusal(std::string_view path, const absl::Status& status,
                  std::string_view peer);

  const std::shared_ptr<const TokenStore> tokens_;
  absl::Mutex log_mu_;
  absl::Time log_window_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
  int logged_in_window_ ABSL_GUARDED_BY(log_mu_) = 0;
  int suppressed_ ABSL_GUARDED_BY(log_mu_) = 0;
};

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_TOKEN_AUTH_H_
