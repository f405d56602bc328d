#include "clients/cli/channel_security.h"

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"

namespace diarization::client {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", flag, "=", path));
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Adds the authorization header to every call of the channel.
class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(const std::string* header) : header_(header) {}
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class TokenInterceptorFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string token)
      : header_("Bearer " + std::move(token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new TokenInterceptor(&header_);
  }

 private:
  // Outlives every interceptor: the channel owns the factory.
  const std::string header_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& target, const ChannelSecurity& security,
    grpc::ChannelArguments args) {
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::InsecureChannelCredentials();
  if (security.uses_tls()) {
    if (security.tls_cert.empty() != security.tls_key.empty()) {
      return absl::InvalidArgumentError(
          "--tls_cert and --tls_key go together (mutual TLS)");
    }
    grpc::SslCredentialsOptions ssl;
    if (!security.tls_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadFile(security.tls_ca, "--tls_ca");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!security.tls_cert.empty()) {
      absl::StatusOr<std::string> cert =
          ReadFile(security.tls_cert, "--tls_cert");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadFile(security.tls_key, "--tls_key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    creds = grpc::SslCredentials(ssl);
    if (!security.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(security.tls_server_name);
    }
  }
  std::string token = security.token;
  if (!security.token_file.empty()) {
    if (!token.empty()) {
      return absl::InvalidArgumentError(
          "give --token or --token_file, not both");
    }
    absl::StatusOr<std::string> text =
        ReadFile(security.token_file, "--token_file");
    if (!text.ok()) return text.status();
    token = std::string(
        absl::StripAsciiWhitespace(text->substr(0, text->find('\n'))));
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file=", security.token_file, " is empty"));
    }
  }
  if (token.empty()) return grpc::CreateCustomChannel(target, creds, args);
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(
      std::make_unique<TokenInterceptorFactory>(std::move(token)));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      target, creds, args, std::move(interceptors));
}

}  // namespace diarization::client
