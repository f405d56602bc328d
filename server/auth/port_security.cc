#include "server/auth/port_security.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/auth/token_auth.h"

namespace diarization::server::auth {

absl::StatusOr<PortSecurity> MakePortSecurity(const SecurityFlags& flags) {
  PortSecurity out;
  if (flags.reflection == "on" || flags.reflection == "off" ||
      flags.reflection == "auto") {
    out.reflection = flags.reflection == "on" ||
                     (flags.reflection == "auto" && flags.auth_tokens.empty());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reflection=", flags.reflection, ": expected auto, on or off"));
  }
  std::shared_ptr<grpc::AuthMetadataProcessor> processor;
  if (!flags.auth_tokens.empty()) {
    if (flags.tls.refresh_s < 1) {
      return absl::InvalidArgumentError("--tls_refresh_s must be >= 1");
    }
    absl::StatusOr<std::unique_ptr<TokenStore>> tokens =
        TokenStore::Open(flags.auth_tokens, absl::Seconds(flags.tls.refresh_s));
    if (!tokens.ok()) return tokens.status();
    out.tokens = *std::move(tokens);
    processor = std::make_shared<TokenAuthProcessor>(out.tokens);
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds =
      MakeServerCredentials(flags.tls, flags.listen, processor);
  if (!creds.ok()) return creds.status();
  out.credentials = *std::move(creds);
  out.summary =
      absl::StrCat(!flags.tls.enabled()          ? "plaintext"
                   : flags.tls.client_ca.empty() ? "TLS"
                                                 : "mutual TLS",
                   out.tokens != nullptr
                       ? absl::StrCat(", tokens (", out.tokens->size(), ")")
                       : ", no tokens",
                   out.reflection ? ", reflection on" : ", reflection off");
  return out;
}

}  // namespace diarization::server::auth
