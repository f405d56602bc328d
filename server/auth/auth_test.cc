// Token file parsing, the token check's decisions, per-principal call
// counting and the token file's reload. Tokens are fresh random per run.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/auth/server_credentials.h"
#include "server/auth/token_auth.h"
#include "server/auth/token_file.h"
#include "server/auth/token_store.h"

namespace diarization::server::auth {
namespace {

using ::testing::HasSubstr;

std::string RandomToken() {
  static std::mt19937_64 rng(std::random_device{}());
  std::string t;
  for (int i = 0; i < 32; ++i)
    t += "abcdefghijklmnopqrstuvwxyz0123456789"[rng() % 36];
  return t;
}

std::string Hex(const TokenHash& h) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(h.data()), h.size()));
}

TEST(HashToken, IsSha256) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(Hex(HashToken("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ParseTokenFile, HashAndPlainEntries) {
  const std::string a = RandomToken(), b = RandomToken();
  const std::string text = absl::StrCat(
      R"({"tokens": [
        {"name": "batch", "sha256": ")",
      Hex(HashToken(a)), R"(",
         "methods": ["Diarize", "DiarizeFile"],
         "limits": {"max_concurrent_calls": 3, "max_backlog_share": 0.25}},
        {"name": "ops", "token": ")",
      b, R"(", "methods": ["*"]}]})");
  absl::StatusOr<TokenTable> t = ParseTokenFile(text);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->entries.size(), 2u);
  const Principal& batch = *t->entries[0].principal;
  EXPECT_EQ(batch.name, "batch");
  EXPECT_TRUE(batch.Allows(Method::kDiarize));
  EXPECT_TRUE(batch.Allows(Method::kDiarizeFile));
  EXPECT_FALSE(batch.Allows(Method::kGetInfo));
  EXPECT_FALSE(batch.Allows(Method::kMetrics));
  EXPECT_FALSE(batch.Allows(Method::kCreateVoiceprint));
  EXPECT_EQ(batch.limits.max_concurrent_calls, 3);
  EXPECT_DOUBLE_EQ(batch.limits.max_backlog_share, 0.25);
  EXPECT_EQ(t->entries[0].sha256, HashToken(a));
  EXPECT_EQ(t->entries[1].sha256, HashToken(b));
  EXPECT_EQ(t->entries[1].principal->methods, kAllMethods);
  EXPECT_EQ(t->entries[1].principal->limits.max_concurrent_calls, 0);
}

TEST(ParseTokenFile, CreateVoiceprintIsAMethodName) {
  const std::string text =
      absl::StrCat(R"({"tokens": [{"name": "enrol", "token": ")", RandomToken(),
                   R"(", "methods": ["CreateVoiceprint"]}]})");
  absl::StatusOr<TokenTable> t = ParseTokenFile(text);
  ASSERT_TRUE(t.ok()) << t.status();
  const Principal& p = *t->entries[0].principal;
  EXPECT_TRUE(p.Allows(Method::kCreateVoiceprint));
  EXPECT_FALSE(p.Allows(Method::kDiarizeFile));
  EXPECT_STREQ(MethodName(Method::kCreateVoiceprint), "CreateVoiceprint");
}

TEST(ParseTokenFile, RejectsMistakesWithTheReason) {
  const std::string tok = RandomToken();
  const std::string h = Hex(HashToken(tok));
  const struct {
    std::string json;
    std::string reason;
  } cases[] = {
      {"not json", "not valid JSON"},
      {R"({"token": []})", "\"tokens\" list"},
      {R"({"tokens": [], "extra": 1})", "unknown key 'extra'"},
      {R"({"tokens": [{"sha256": ")" + h + R"(", "methods": ["*"]}]})",
       "has no name"},
      {R"({"tokens": [{"name": "a b", "sha256": ")" + h +
           R"(", "methods": ["*"]}]})",
       ".name must be"},
      {R"({"tokens": [{"name": "a", "methods": ["*"]}]})",
       "neither \"sha256\" nor \"token\""},
      {R"({"tokens": [{"name": "a", "sha256": "abc", "methods": ["*"]}]})",
       "64 hex digits"},
      {R"({"tokens": [{"name": "a", "token": "short", "methods": ["*"]}]})",
       "shorter than 16"},
      {R"({"tokens": [{"name": "a", "token": ")" + tok + R"(", "sha256": ")" +
           h + R"(", "methods": ["*"]}]})",
       "both"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h + R"("}]})",
       "no \"methods\""},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": []}]})",
       "non-empty list"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["Diarise"]}]})",
       "unknown method 'Diarise'"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"], "limits": {"max_calls": 1}}]})",
       "unknown key 'max_calls'"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"], "limits": {"max_backlog_share": 2}}]})",
       "[0, 1]"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"], "limits": {"max_concurrent_calls": -1}}]})",
       ">= 0"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"]}, {"name": "a", "token": ")" + RandomToken() +
           R"(", "methods": ["*"]}]})",
       "name is used twice"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"]}, {"name": "b", "token": ")" + tok +
           R"(", "methods": ["*"]}]})",
       "same token is listed twice"},
      {R"({"tokens": [{"name": "a", "sha256": ")" + h +
           R"(", "methods": ["*"], "role": "admin"}]})",
       "unknown key 'role'"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<TokenTable> t = ParseTokenFile(c.json);
    ASSERT_FALSE(t.ok()) << c.json;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr(c.reason)) << c.json;
    // The error names the problem, never the secret.
    EXPECT_THAT(t.status().message(), ::testing::Not(HasSubstr(tok)));
  }
}

TEST(BearerToken, ParsesTheScheme) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
  EXPECT_EQ(BearerToken("abc"), "");
}

TEST(RuleForPath, KnowsEveryMethod) {
  EXPECT_TRUE(RuleForPath("/grpc.health.v1.Health/Check").open);
  EXPECT_TRUE(RuleForPath("/grpc.health.v1.Health/Watch").open);
  EXPECT_EQ(RuleForPath("/diarization.v1.Diarization/Diarize").method,
            Method::kDiarize);
  EXPECT_EQ(RuleForPath("/diarization.v1.Diarization/DiarizeFile").method,
            Method::kDiarizeFile);
  EXPECT_EQ(RuleForPath("/diarization.v1.Diarization/GetInfo").method,
            Method::kGetInfo);
  EXPECT_EQ(RuleForPath("/diarization.v1.Diarization/CreateVoiceprint").method,
            Method::kCreateVoiceprint);
  EXPECT_EQ(
      RuleForPath(
          "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
          .method,
      Method::kReflection);
  for (const char* p : {"/diarization.v1.Diarization/Other", "", "/",
                        "/grpc.health.v1.Healthy/Check",
                        "/diarization.v1.Diarization/Diarize/x"}) {
    EXPECT_FALSE(RuleForPath(p).open) << p;
    EXPECT_FALSE(RuleForPath(p).method.has_value()) << p;
  }
}

class AuthorizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TokenTable> t = ParseTokenFile(absl::StrCat(
        R"({"tokens": [{"name": "stream-only", "token": ")", stream_,
        R"(", "methods": ["Diarize"]},
        {"name": "all", "sha256": ")",
        Hex(HashToken(all_)), R"(", "methods": ["*"]}]})"));
    ASSERT_TRUE(t.ok()) << t.status();
    store_ = TokenStore::FromTable(*std::move(t));
  }
  absl::StatusCode Code(std::optional<Method> m,
                        std::optional<std::string> header) {
    std::optional<std::string_view> h;
    if (header.has_value()) h = *header;
    return Authorize(*store_, m, h).status().code();
  }
  const std::string stream_ = RandomToken(), all_ = RandomToken();
  std::unique_ptr<TokenStore> store_;
};

TEST_F(AuthorizeTest, CodesPerCase) {
  using C = absl::StatusCode;
  EXPECT_EQ(Code(Method::kDiarize, std::nullopt), C::kUnauthenticated);
  EXPECT_EQ(Code(Method::kDiarize, "Bearer "), C::kUnauthenticated);
  EXPECT_EQ(Code(Method::kDiarize, "Basic " + stream_), C::kUnauthenticated);
  EXPECT_EQ(Code(Method::kDiarize, "Bearer " + RandomToken()),
            C::kUnauthenticated);
  // One character off.
  std::string near = stream_;
  near.back() = near.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(Code(Method::kDiarize, "Bearer " + near), C::kUnauthenticated);
  EXPECT_EQ(Code(Method::kDiarize, "Bearer " + stream_), C::kOk);
  EXPECT_EQ(Code(Method::kDiarizeFile, "Bearer " + stream_),
            C::kPermissionDenied);
  EXPECT_EQ(Code(Method::kGetInfo, "Bearer " + stream_), C::kPermissionDenied);
  EXPECT_EQ(Code(std::nullopt, "Bearer " + stream_), C::kPermissionDenied);
  for (Method m :
       {Method::kDiarize, Method::kDiarizeFile, Method::kGetInfo,
        Method::kReflection, Method::kMetrics, Method::kCreateVoiceprint}) {
    EXPECT_EQ(Code(m, "Bearer " + all_), C::kOk);
  }
  absl::StatusOr<std::shared_ptr<const Principal>> p =
      Authorize(*store_, Method::kGetInfo, "Bearer " + all_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->name, "all");
  const absl::Status denied =
      Authorize(*store_, Method::kGetInfo, "Bearer " + stream_).status();
  EXPECT_THAT(denied.message(),
              HasSubstr("'stream-only' may not call GetInfo"));
  EXPECT_THAT(denied.message(), ::testing::Not(HasSubstr(stream_)));
}

TEST(PrincipalCalls, HoldsEachPrincipalToItsLimit) {
  auto two = std::make_shared<Principal>();
  two->name = "two";
  two->limits.max_concurrent_calls = 2;
  auto unlimited = std::make_shared<Principal>();
  unlimited->name = "unlimited";
  PrincipalCalls calls;
  std::vector<PrincipalCalls::Slot> held;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<PrincipalCalls::Slot> s = calls.Admit(two);
    ASSERT_TRUE(s.ok());
    held.push_back(*std::move(s));
  }
  absl::StatusOr<PrincipalCalls::Slot> third = calls.Admit(two);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("'two'"));
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<PrincipalCalls::Slot> s = calls.Admit(unlimited);
    ASSERT_TRUE(s.ok());
    held.push_back(*std::move(s));
  }
  EXPECT_EQ(calls.open_calls("two"), 2);
  EXPECT_EQ(calls.open_calls("unlimited"), 50);
  held.erase(held.begin());  // one of "two" ends
  EXPECT_EQ(calls.open_calls("two"), 1);
  EXPECT_TRUE(calls.Admit(two).ok());  // admitted, then released at once
  EXPECT_EQ(calls.open_calls("two"), 1);
  held.clear();
  EXPECT_EQ(calls.open_calls("two"), 0);
  EXPECT_EQ(calls.open_calls("unlimited"), 0);
  // No principal (auth off): always admitted, nothing counted.
  absl::StatusOr<PrincipalCalls::Slot> none = calls.Admit(nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->principal(), nullptr);
}

TEST(TokenStore, ReloadsAChangedFileAndKeepsTheOldOnABadOne) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                        "/tokens-", getpid(), ".json");
  const std::string first = RandomToken(), second = RandomToken();
  auto write = [&](const std::string& text) {
    // Replace by rename, as a Secret volume update does.
    std::ofstream(path + ".tmp") << text;
    ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);
  };
  auto file = [](const std::string& token) {
    return absl::StrCat(R"({"tokens": [{"name": "t", "token": ")", token,
                        R"(", "methods": ["*"]}]})");
  };
  write(file(first));
  // The watcher polls every 100 ms; Reload() is also called directly.
  absl::StatusOr<std::unique_ptr<TokenStore>> store =
      TokenStore::Open(path, absl::Milliseconds(100));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_NE((*store)->Find(first), nullptr);
  EXPECT_EQ((*store)->Find(second), nullptr);

  write(file(second));
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while ((*store)->Find(second) == nullptr && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_NE((*store)->Find(second), nullptr) << "the watcher did not reload";
  EXPECT_EQ((*store)->Find(first), nullptr) << "a revoked token still works";

  write("{ broken");
  const absl::Status bad = (*store)->Reload();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("previous tokens stay in force"));
  EXPECT_NE((*store)->Find(second), nullptr);

  EXPECT_FALSE(TokenStore::Open(path + ".missing", absl::ZeroDuration()).ok());
  std::remove(path.c_str());
}

TEST(IsLoopbackListen, Cases) {
  EXPECT_TRUE(IsLoopbackListen("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackListen("127.1.2.3:0"));
  EXPECT_TRUE(IsLoopbackListen("localhost:50051"));
  EXPECT_TRUE(IsLoopbackListen("[::1]:50051"));
  EXPECT_FALSE(IsLoopbackListen("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackListen("[::]:50051"));
  EXPECT_FALSE(IsLoopbackListen(":50051"));
  EXPECT_FALSE(IsLoopbackListen("10.0.0.5:50051"));
  EXPECT_FALSE(IsLoopbackListen("127.0.0.1.example.com:50051"));
}

TEST(MakeServerCredentials, RefusesTokensInClearOffLoopback) {
  auto store = std::shared_ptr<TokenStore>(TokenStore::FromTable({}));
  auto processor = std::make_shared<TokenAuthProcessor>(store);
  EXPECT_TRUE(MakeServerCredentials({}, "127.0.0.1:0", processor).ok());
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> off =
      MakeServerCredentials({}, "0.0.0.0:50051", processor);
  ASSERT_FALSE(off.ok());
  EXPECT_THAT(off.status().message(), HasSubstr("--tls_cert"));
  // Plaintext without tokens: allowed, with a warning off loopback only.
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(MakeServerCredentials({}, "0.0.0.0:50051", nullptr).ok());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("plaintext gRPC on --listen=0.0.0.0:50051"));
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(MakeServerCredentials({}, "127.0.0.1:50051", nullptr).ok());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              ::testing::Not(HasSubstr("plaintext")));
}

TEST(CheckTlsFiles, NamesTheFlagAtFault) {
  EXPECT_THAT(CheckTlsFiles({.cert = "/nonexistent/c.pem"}).message(),
              HasSubstr("go together"));
  EXPECT_THAT(CheckTlsFiles({.client_ca = "/nonexistent/ca.pem"}).message(),
              HasSubstr("--tls_client_ca needs"));
  EXPECT_THAT(
      CheckTlsFiles({.cert = "/nonexistent/c.pem", .key = "/nonexistent/k.pem"})
          .message(),
      HasSubstr("cannot read --tls_cert"));
  EXPECT_TRUE(CheckTlsFiles({}).ok());
}

}  // namespace
}  // namespace diarization::server::auth
