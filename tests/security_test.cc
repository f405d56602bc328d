// Security end to end: the real diarization_server on 127.0.0.1 with
// certificates that openssl makes for this run (tests/make_test_certs.sh)
// and a token file written here, driven through gRPC:
//   - TLS works, and a client that does not trust the server's CA or speaks
//     plaintext is refused;
//   - mutual TLS refuses a client without a certificate and one whose
//     certificate another CA signed;
//   - a rotated server certificate is served without a restart;
//   - tokens are enforced per method (UNAUTHENTICATED vs PERMISSION_DENIED),
//     per-token concurrent calls are limited, the token file is re-read;
//   - health needs no token; reflection is off by default with tokens;
//   - unsafe or broken configurations stop the server at start with a reason.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRate = 16000;

std::mt19937_64& Rng() {
  static std::mt19937_64* rng = [] {
    const uint64_t seed = std::random_device{}();
    std::fprintf(stderr, "security_test seed: %llu\n",
                 static_cast<unsigned long long>(seed));
    return new std::mt19937_64(seed);
  }();
  return *rng;
}

std::string RandomToken() {
  std::string t;
  for (int i = 0; i < 40; ++i) {
    t += "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        [Rng()() % 62];
  }
  return t;
}

// Two seconds of noise with a tone: any audio the server accepts.
std::string RandomPcm(double seconds) {
  std::normal_distribution<double> noise(0, 0.05);
  const int64_t n = static_cast<int64_t>(seconds * kRate);
  std::string out(static_cast<size_t>(n) * 2, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const double v = 0.3 * std::sin(2 * M_PI * 180 * i / kRate) + noise(Rng());
    const auto s = static_cast<int16_t>(std::clamp(v, -1.0, 1.0) * 32767);
    out[2 * i] = static_cast<char>(s & 0xff);
    out[2 * i + 1] = static_cast<char>((s >> 8) & 0xff);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Written whole, then renamed over `path`.
void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary) << text;
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << path;
}

// The certificates of this run, made once.
const std::string& CertDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(NewTempDir("certs"));
    const std::string cmd = absl::StrCat(
        "/bin/bash ", Runfile("tests/make_test_certs.sh"), " ", *d);
    if (std::system(cmd.c_str()) != 0) {
      ADD_FAILURE() << "make_test_certs.sh failed: " << cmd;
    }
    return d;
  }();
  return *dir;
}

std::string Cert(const std::string& name) { return CertDir() + "/" + name; }

std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string& ca,
                                              const std::string& cert = "",
                                              const std::string& key = "") {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadFile(Cert(ca));
  if (!cert.empty()) {
    o.pem_cert_chain = ReadFile(Cert(cert));
    o.pem_private_key = ReadFile(Cert(key));
  }
  return grpc::SslCredentials(o);
}

// A channel with its own connection (no subchannel shared with earlier
// channels), so a handshake happens now.
std::shared_ptr<grpc::Channel> Fresh(
    const ServerProcess& server,
    std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(server.address(), creds, args);
}

void Prepare(grpc::ClientContext* context, const std::string& token) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(20));
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

grpc::Status GetInfo(const std::shared_ptr<grpc::Channel>& channel,
                     const std::string& token, v1::ServerInfo* info = nullptr,
                     std::string* peer_cn = nullptr) {
  grpc::ClientContext context;
  Prepare(&context, token);
  v1::ServerInfo ignored;
  const grpc::Status s = v1::Diarization::NewStub(channel)->GetInfo(
      &context, {}, info != nullptr ? info : &ignored);
  if (peer_cn != nullptr && context.auth_context() != nullptr) {
    for (const auto& v :
         context.auth_context()->FindPropertyValues("x509_common_name")) {
      *peer_cn = std::string(v.data(), v.size());
    }
  }
  return s;
}

grpc::Status Health(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::ClientContext context;
  Prepare(&context, "");
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = grpc::health::v1::Health::NewStub(channel)->Check(
      &context, {}, &response);
  if (s.ok() &&
      response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "health not SERVING");
  }
  return s;
}

v1::DiarizationConfig RawConfig() {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(kRate);
  c.set_uri("security");
  return c;
}

grpc::Status DiarizeFile(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& token) {
  grpc::ClientContext context;
  Prepare(&context, token);
  v1::DiarizeResult result;
  auto stub = v1::Diarization::NewStub(channel);
  return server::testing::DiarizeFile(*stub, RawConfig(), RandomPcm(2.0),
                                      &result, &context);
}

grpc::Status DiarizeStream(const std::shared_ptr<grpc::Channel>& channel,
                           const std::string& token) {
  grpc::ClientContext context;
  Prepare(&context, token);
  auto stub = v1::Diarization::NewStub(channel);
  return server::testing::DiarizeStream(
             *stub, server::testing::ConfigRequest(RawConfig()), RandomPcm(2.0),
             3200, &context)
      .status;
}

// ServerReflectionInfo with one ListServices request, as a unary call at the
// wire level (one message each way): UNIMPLEMENTED when reflection is off.
grpc::Status Reflection(const std::shared_ptr<grpc::Channel>& channel,
                        const std::string& token) {
  grpc::ClientContext context;
  Prepare(&context, token);
  // ServerReflectionRequest{list_services: ""}: field 7, length 0.
  const std::string request("\x3a\x00", 2);
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1), out;
  grpc::GenericStub stub(channel);
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::StubOptions(), &in, &out, [&](grpc::Status s) {
        status = s;
        done.Notify();
      });
  done.WaitForNotification();
  return status;
}

std::string TokenFile(const std::vector<std::string>& entries) {
  std::string out = "{\"tokens\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    out += (i > 0 ? ",\n" : "\n") + entries[i];
  }
  return out + "\n]}\n";
}

std::string Entry(const std::string& name, const std::string& token,
                  const std::string& methods, const std::string& extra = "") {
  return absl::StrCat(R"({"name": ")", name, R"(", "token": ")", token,
                      R"(", "methods": )", methods, extra, "}");
}

#define EXPECT_CODE(expr, code)                                           \
  do {                                                                    \
    const grpc::Status s_ = (expr);                                       \
    EXPECT_EQ(s_.error_code(), grpc::StatusCode::code)                    \
        << #expr << ": " << s_.error_code() << " " << s_.error_message(); \
  } while (0)

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> models = RandomModelDir();
    ASSERT_TRUE(models.ok()) << models.status();
    models_ = *models;
    ASSERT_FALSE(CertDir().empty());
  }
  std::string models_;
};

TEST_F(SecurityTest, MutualTlsTokensReloadAndRotation) {
  const std::string dir = NewTempDir("mtls");
  // The server's own copies: the test replaces them to rotate.
  WriteFile(dir + "/cert.pem", ReadFile(Cert("server.pem")));
  WriteFile(dir + "/key.pem", ReadFile(Cert("server.key")));
  const std::string all = RandomToken(), stream = RandomToken(),
                    info = RandomToken();
  const std::string tokens = dir + "/tokens.json";
  WriteFile(tokens,
            TokenFile({Entry("all", all, R"(["*"])"),
                       Entry("stream-only", stream, R"(["Diarize"])",
                             R"(, "limits": {"max_concurrent_calls": 1})"),
                       Entry("info-only", info, R"(["GetInfo"])")}));
  auto mtls = Tls("ca.pem", "client.pem", "client.key");
  auto server = ServerProcess::Start(
      models_,
      {"--tls_cert=" + dir + "/cert.pem", "--tls_key=" + dir + "/key.pem",
       "--tls_client_ca=" + Cert("ca.pem"), "--auth_tokens=" + tokens,
       "--tls_refresh_s=1"},
      mtls);
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  auto ch = Fresh(s, mtls);

  // Health is open: no token.
  EXPECT_CODE(Health(ch), OK);

  // GetInfo: who may.
  EXPECT_CODE(GetInfo(ch, ""), UNAUTHENTICATED);
  EXPECT_CODE(GetInfo(ch, RandomToken()), UNAUTHENTICATED);
  EXPECT_CODE(GetInfo(ch, stream), PERMISSION_DENIED);
  EXPECT_CODE(GetInfo(ch, info), OK);
  v1::ServerInfo server_info;
  std::string cn;
  EXPECT_CODE(GetInfo(ch, all, &server_info, &cn), OK);
  EXPECT_EQ(cn, "server-1");
  EXPECT_EQ(server_info.state(), "serving");
  // No host path in what GetInfo tells a client.
  EXPECT_THAT(server_info.DebugString(), ::testing::Not(HasSubstr(models_)));
  EXPECT_THAT(server_info.DebugString(), ::testing::Not(HasSubstr(dir)));

  // The audio methods.
  EXPECT_CODE(DiarizeFile(ch, ""), UNAUTHENTICATED);
  EXPECT_CODE(DiarizeFile(ch, info), PERMISSION_DENIED);
  EXPECT_CODE(DiarizeFile(ch, stream), PERMISSION_DENIED);
  EXPECT_CODE(DiarizeFile(ch, all), OK);
  EXPECT_CODE(DiarizeStream(ch, ""), UNAUTHENTICATED);
  EXPECT_CODE(DiarizeStream(ch, info), PERMISSION_DENIED);
  EXPECT_CODE(DiarizeStream(ch, stream), OK);

  // Reflection is off by default with tokens, even for a token allowed
  // everything.
  EXPECT_CODE(Reflection(ch, all), UNIMPLEMENTED);
  EXPECT_CODE(Reflection(ch, ""), UNAUTHENTICATED);

  // stream-only may hold one call at a time.
  {
    grpc::ClientContext held_context;
    Prepare(&held_context, stream);
    auto stub = v1::Diarization::NewStub(ch);
    auto held = stub->Diarize(&held_context);
    ASSERT_TRUE(held->Write(server::testing::ConfigRequest(RawConfig())));
    // Admission happens when the call arrives; poll until it counts.
    grpc::Status second;
    const absl::Time end = absl::Now() + absl::Seconds(10);
    do {
      second = DiarizeStream(ch, stream);
    } while (second.ok() && absl::Now() < end);
    EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << second.error_message();
    EXPECT_THAT(second.error_message(), HasSubstr("'stream-only'"));
    EXPECT_CODE(DiarizeStream(ch, all), OK);  // others are not held back
    held_context.TryCancel();
    held->Finish().IgnoreError();
  }
  // The slot is freed when the cancelled call's reactor goes.
  {
    grpc::Status again;
    const absl::Time end = absl::Now() + absl::Seconds(10);
    do {
      again = DiarizeStream(ch, stream);
    } while (!again.ok() && absl::Now() < end);
    EXPECT_TRUE(again.ok()) << again.error_message();
  }

  // mTLS: no client certificate, or one from another CA: no connection.
  EXPECT_CODE(GetInfo(Fresh(s, Tls("ca.pem")), all), UNAVAILABLE);
  EXPECT_CODE(
      GetInfo(Fresh(s, Tls("ca.pem", "other_client.pem", "other_client.key")),
              all),
      UNAVAILABLE);
  EXPECT_CODE(GetInfo(Fresh(s, grpc::InsecureChannelCredentials()), all),
              UNAVAILABLE);

  // Token file re-read: "all" revoked, a new token added, no restart.
  const std::string fresh = RandomToken();
  WriteFile(tokens, TokenFile({Entry("new", fresh, R"(["GetInfo"])"),
                               Entry("info-only", info, R"(["GetInfo"])")}));
  {
    const absl::Time end = absl::Now() + absl::Seconds(15);
    while (GetInfo(ch, fresh).error_code() != grpc::StatusCode::OK &&
           absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    EXPECT_CODE(GetInfo(ch, fresh), OK);
    EXPECT_CODE(GetInfo(ch, all), UNAUTHENTICATED);
    EXPECT_CODE(GetInfo(ch, info), OK);
  }
  // A broken edit keeps the tokens in force.
  WriteFile(tokens, "{ not json");
  absl::SleepFor(absl::Milliseconds(2500));
  EXPECT_CODE(GetInfo(ch, fresh), OK);
  EXPECT_THAT(s.Log(), HasSubstr("auth_tokens_reload_failed"));

  // Certificate rotation: new connections get the new certificate.
  WriteFile(dir + "/key.pem", ReadFile(Cert("server2.key")));
  WriteFile(dir + "/cert.pem", ReadFile(Cert("server2.pem")));
  {
    const absl::Time end = absl::Now() + absl::Seconds(20);
    std::string now_cn;
    while (absl::Now() < end) {
      now_cn.clear();
      if (GetInfo(Fresh(s, mtls), fresh, nullptr, &now_cn).ok() &&
          now_cn == "server-2") {
        break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    EXPECT_EQ(now_cn, "server-2") << "the rotated certificate was not served";
  }
  // The connection made before the rotation still works.
  EXPECT_CODE(GetInfo(ch, fresh), OK);
  EXPECT_THAT(s.Log(), HasSubstr("\"auth_refused\""));
  EXPECT_THAT(s.Log(), ::testing::Not(HasSubstr(all)))
      << "a token reached the log";
}

TEST_F(SecurityTest, TlsWithoutClientCertificates) {
  auto tls = Tls("ca.pem");
  auto server = ServerProcess::Start(
      models_,
      {"--tls_cert=" + Cert("server.pem"), "--tls_key=" + Cert("server.key")},
      tls);
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  EXPECT_CODE(GetInfo(Fresh(s, tls), ""), OK);
  EXPECT_CODE(DiarizeFile(Fresh(s, tls), ""), OK);
  // Without tokens, reflection is on by default.
  EXPECT_CODE(Reflection(Fresh(s, tls), ""), OK);
  // A client that trusts another CA, or speaks plaintext, gets nowhere.
  EXPECT_CODE(GetInfo(Fresh(s, Tls("other_ca.pem")), ""), UNAVAILABLE);
  EXPECT_CODE(GetInfo(Fresh(s, grpc::InsecureChannelCredentials()), ""),
              UNAVAILABLE);
  EXPECT_THAT(s.Log(), HasSubstr("TLS, no tokens, reflection on"));
}

TEST_F(SecurityTest, TokensOnPlaintextLoopback) {
  const std::string dir = NewTempDir("loopback");
  const std::string token = RandomToken();
  WriteFile(dir + "/tokens.json",
            TokenFile({Entry("local", token, R"(["GetInfo", "Diarize"])")}));
  auto server = ServerProcess::Start(
      models_, {"--auth_tokens=" + dir + "/tokens.json", "--reflection=on"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  auto ch = Fresh(s, grpc::InsecureChannelCredentials());
  EXPECT_CODE(Health(ch), OK);
  EXPECT_CODE(GetInfo(ch, ""), UNAUTHENTICATED);
  EXPECT_CODE(GetInfo(ch, token), OK);
  EXPECT_CODE(DiarizeStream(ch, token), OK);
  EXPECT_CODE(DiarizeFile(ch, token), PERMISSION_DENIED);
  // --reflection=on: served, but behind the token like any method.
  EXPECT_CODE(Reflection(ch, ""), UNAUTHENTICATED);
  EXPECT_CODE(Reflection(ch, token), PERMISSION_DENIED);
}

TEST_F(SecurityTest, UnsafeOrBrokenConfigurationsDoNotStart) {
  const std::string dir = NewTempDir("broken");
  WriteFile(dir + "/tokens.json",
            TokenFile({Entry("t", RandomToken(), R"(["*"])")}));
  WriteFile(dir + "/bad.json", R"({"tokens": [{"name": "t"}]})");
  const struct {
    std::vector<std::string> flags;
    std::string reason;
  } cases[] = {
      // Bearer tokens in clear off loopback. 192.0.2.1 (TEST-NET-1) is not
      // an address of this host: were the check missing, the bind would
      // fail with another message, and nothing listens beyond loopback.
      {{"--listen=192.0.2.1:0", "--auth_tokens=" + dir + "/tokens.json"},
       "cross the network in clear"},
      {{"--tls_cert=" + Cert("server.pem"), "--tls_key=" + Cert("client.key")},
       "does not match"},
      {{"--tls_cert=" + Cert("server.pem")}, "go together"},
      {{"--tls_client_ca=" + Cert("ca.pem")}, "--tls_client_ca needs"},
      {{"--tls_cert=" + Cert("ca.key"), "--tls_key=" + Cert("server.key")},
       "no PEM certificate"},
      {{"--auth_tokens=" + dir + "/bad.json"}, "has neither"},
      {{"--auth_tokens=" + dir + "/missing.json"}, "cannot read"},
      {{"--reflection=maybe"}, "--reflection=maybe"},
  };
  for (const auto& c : cases) {
    auto server = ServerProcess::Start(models_, c.flags);
    ASSERT_FALSE(server.ok()) << c.reason;
    EXPECT_THAT(server.status().message(), HasSubstr("exited before"))
        << c.reason;
    EXPECT_THAT(server.status().message(), HasSubstr(c.reason));
  }
}

}  // namespace
}  // namespace diarization::testing
