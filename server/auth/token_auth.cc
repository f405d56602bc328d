#include "server/auth/token_auth.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/request_log.h"

namespace diarization::server::auth {
namespace {

constexpr int kLogBurst = 10;

// Debian's Abseil has its own string_view, not std::string_view.
absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

}  // namespace

PathRule RuleForPath(std::string_view path) {
  PathRule rule;
  if (StartsWith(path, "/grpc.health.v1.Health/")) {
    rule.open = true;
  } else if (path == "/diarization.v1.Diarization/Diarize") {
    rule.method = Method::kDiarize;
  } else if (path == "/diarization.v1.Diarization/DiarizeFile") {
    rule.method = Method::kDiarizeFile;
  } else if (path == "/diarization.v1.Diarization/GetInfo") {
    rule.method = Method::kGetInfo;
  } else if (path == "/diarization.v1.Diarization/CreateVoiceprint") {
    rule.method = Method::kCreateVoiceprint;
  } else if (path ==
                 "/grpc.reflection.v1alpha.ServerReflection/"
                 "ServerReflectionInfo" ||
             path ==
                 "/grpc.reflection.v1.ServerReflection/"
                 "ServerReflectionInfo") {
    rule.method = Method::kReflection;
  }
  return rule;
}

std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(Absl(authorization.substr(0, kScheme.size())),
                              Absl(kScheme))) {
    return {};
  }
  const absl::string_view token =
      absl::StripAsciiWhitespace(Absl(authorization.substr(kScheme.size())));
  return std::string_view(token.data(), token.size());
}

absl::StatusOr<std::shared_ptr<const Principal>> Authorize(
    const TokenStore& tokens, std::optional<Method> method,
    std::optional<std::string_view> authorization) {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "this server requires a token: send call metadata 'authorization: "
        "Bearer <token>' (diarize_client --token)");
  }
  const std::string_view token = BearerToken(*authorization);
  if (token.empty()) {
    return absl::UnauthenticatedError(
        "malformed authorization metadata: expected 'Bearer <token>'");
  }
  std::shared_ptr<const Principal> principal = tokens.Find(token);
  if (principal == nullptr) {
    return absl::UnauthenticatedError("the token is not valid");
  }
  if (!method.has_value()) {
    return absl::PermissionDeniedError("no such method on this server");
  }
  if (!principal->Allows(*method)) {
    return absl::PermissionDeniedError(
        absl::StrCat("the token '", principal->name, "' may not call ",
                     MethodName(*method)));
  }
  return principal;
}

grpc::Status TokenAuthProcessor::Process(const InputMetadata& auth_metadata,
                                         grpc::AuthContext* context,
                                         OutputMetadata* /*consumed*/,
                                         OutputMetadata* /*response*/) {
  std::string_view path;
  std::optional<std::string_view> authorization;
  for (const auto& [key, value] : auth_metadata) {
    const std::string_view k(key.data(), key.size());
    if (k == ":path") path = std::string_view(value.data(), value.size());
    if (k == "authorization" && !authorization.has_value()) {
      authorization = std::string_view(value.data(), value.size());
    }
  }
  const PathRule rule = RuleForPath(path);
  if (rule.open) return grpc::Status::OK;
  absl::StatusOr<std::shared_ptr<const Principal>> principal =
      Authorize(*tokens_, rule.method, authorization);
  if (principal.ok()) return grpc::Status::OK;
  std::string peer;
  if (context != nullptr) {
    for (const grpc::string_ref& v :
         context->FindPropertyValues("transport_security_type")) {
      peer = std::string(v.data(), v.size());
    }
  }
  LogRefusal(path, principal.status(), peer);
  return ToGrpc(principal.status());
}

void TokenAuthProcessor::LogRefusal(std::string_view path,
                                    const absl::Status& status,
                                    std::string_view transport) {
  int suppressed = 0;
  {
    absl::MutexLock lock(&log_mu_);
    const absl::Time now = absl::Now();
    if (now - log_window_ >= absl::Seconds(1)) {
      log_window_ = now;
      logged_in_window_ = 0;
    }
    if (++logged_in_window_ > kLogBurst) {
      ++suppressed_;
      return;
    }
    suppressed = suppressed_;
    suppressed_ = 0;
  }
  // The path is the client's own text: cap it.
  LogEvent("auth_refused",
           absl::StrCat(
               "method=", Absl(path.substr(0, 128)),
               " code=", absl::StatusCodeToString(status.code()),
               " reason=", status.message(), " transport=", Absl(transport),
               suppressed > 0 ? absl::StrCat(" (", suppressed,
                                             " earlier refusals not logged)")
                              : ""));
}

}  // namespace diarization::server::auth
