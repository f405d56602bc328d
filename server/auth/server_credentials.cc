#include "server/auth/server_credentials.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "server/request_log.h"

namespace diarization::server::auth {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

absl::StatusOr<std::unique_ptr<X509, X509Free>> ReadCert(
    const std::string& path, const char* flag) {
  std::unique_ptr<FILE, FileCloser> f(fopen(path.c_str(), "r"));
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", flag, "=", path));
  }
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, " holds no PEM certificate"));
  }
  return cert;
}

}  // namespace

bool IsLoopbackListen(std::string_view listen) {
  std::string_view host = listen;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    host = close == std::string_view::npos ? "" : host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':');
             colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::Status CheckTlsFiles(const TlsFiles& tls) {
  if (tls.cert.empty() != tls.key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together: give both or neither");
  }
  if (!tls.client_ca.empty() && tls.cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key (mutual TLS is TLS)");
  }
  if (tls.refresh_s < 1) {
    return absl::InvalidArgumentError("--tls_refresh_s must be >= 1");
  }
  if (tls.cert.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<X509, X509Free>> cert =
      ReadCert(tls.cert, "--tls_cert");
  if (!cert.ok()) return cert.status();
  std::unique_ptr<FILE, FileCloser> f(fopen(tls.key.c_str(), "r"));
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read --tls_key=", tls.key));
  }
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key=", tls.key, " holds no (unencrypted) PEM private key"));
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key=", tls.key,
        " does not match the certificate in --tls_cert=", tls.cert));
  }
  if (!tls.client_ca.empty()) {
    absl::StatusOr<std::unique_ptr<X509, X509Free>> ca =
        ReadCert(tls.client_ca, "--tls_client_ca");
    if (!ca.ok()) return ca.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& tls, std::string_view listen,
    std::shared_ptr<grpc::AuthMetadataProcessor> processor) {
  if (absl::Status s = CheckTlsFiles(tls); !s.ok()) return s;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls.enabled()) {
    auto provider =
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            tls.key, tls.cert, tls.client_ca,
            static_cast<unsigned int>(tls.refresh_s));
    grpc::experimental::TlsServerCredentialsOptions options(provider);
    options.watch_identity_key_cert_pairs();
    if (!tls.client_ca.empty()) {
      options.watch_root_certs();
      options.set_cert_request_type(
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    } else {
      options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    }
    creds = grpc::experimental::TlsServerCredentials(options);
    LogEvent("tls", absl::StrCat(tls.client_ca.empty() ? "TLS" : "mutual TLS",
                                 " on ", std::string(listen),
                                 "; certificate files re-read "
                                 "every ",
                                 tls.refresh_s, " s"));
  } else if (processor != nullptr) {
    if (!IsLoopbackListen(listen)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--auth_tokens without TLS on --listen=", std::string(listen),
          ": bearer tokens would cross the network in clear text. Pass "
          "--tls_cert and --tls_key, or listen on a loopback address"));
    }
    // Loopback peers only; plaintext on the wire, but gRPC runs the
    // processor (it refuses one on insecure credentials).
    creds = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  } else {
    if (!IsLoopbackListen(listen)) {
      LogEvent("warning",
               absl::StrCat("plaintext gRPC on --listen=", std::string(listen),
                            ", which is not loopback: anyone who reaches "
                            "the port can call the service and read the "
                            "traffic (docs/operations.md, Security)"));
    }
    return grpc::InsecureServerCredentials();
  }
  if (processor != nullptr) creds->SetAuthMetadataProcessor(processor);
  return creds;
}

}  // namespace diarization::server::auth
