// Scale-out on loopback: several real diarization_server processes (CPU,
// random weights) behind one client channel, as Kubernetes runs them behind
// the headless Service (deploy/k8s/base/service.yaml). The client uses the
// CLI's own service config (clients/cli/channel_config.h): round_robin,
// client-side health checking and a retry of UNAVAILABLE.
//
//  - calls spread over every replica (each server's own
//    diarization_requests_total says how many it served);
//  - a replica that gets SIGTERM reports NOT_SERVING, the client stops
//    sending it new calls (it refuses none: its UNAVAILABLE count stays 0)
//    while its open stream finishes, and no call of the client fails; a
//    channel without health checking keeps picking it and gets UNAVAILABLE,
//    which shows what the health check is for;
//  - with --max_connection_age_s a long-lived client re-resolves its DNS
//    name and starts using a replica that appeared after it connected. The
//    name is served by a fake DNS server (tests/fake_dns_server.h) whose A
//    records change as a headless Service's do; the replicas listen on
//    127.0.0.1 and 127.0.0.2 with one port, since A records carry no port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "clients/cli/channel_config.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/grpc.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "tests/fake_dns_server.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRate = 16000;
// Small engine per process: three servers share a CI machine's two cores.
const std::vector<std::string> kSmallServer = {
    "--threads=1", "--work_threads=1", "--host_threads=1",
    "--segmentation_batch_size=8", "--embedding_batch_size=8"};

std::vector<std::string> ServerFlags(std::vector<std::string> extra) {
  std::vector<std::string> flags = kSmallServer;
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

// Fresh random 16-bit PCM: tones at random pitches in noise (random weights
// make any audio "speech"; only the count of calls matters here).
std::string RandomAudio(double seconds) {
  static std::mt19937_64 rng([] {
    const uint64_t seed = std::random_device{}();
    std::fprintf(stderr, "multi_replica_test audio seed: %llu\n",
                 static_cast<unsigned long long>(seed));
    return seed;
  }());
  std::uniform_real_distribution<double> pitch(100, 300);
  std::normal_distribution<double> noise(0, 0.02);
  const int64_t n = static_cast<int64_t>(seconds * kRate);
  std::string out(static_cast<size_t>(n) * 2, '\0');
  double f0 = pitch(rng);
  for (int64_t i = 0; i < n; ++i) {
    if (i % (kRate / 2) == 0) f0 = pitch(rng);
    const double v =
        0.3 * std::sin(2 * M_PI * f0 * static_cast<double>(i) / kRate) +
        noise(rng);
    const int16_t s = static_cast<int16_t>(std::clamp(v, -1.0, 1.0) * 32767);
    out[2 * i] = static_cast<char>(s & 0xff);
    out[2 * i + 1] = static_cast<char>((s >> 8) & 0xff);
  }
  return out;
}

v1::DiarizationConfig RawConfig() {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(kRate);
  c.set_uri("replica");
  return c;
}

// GET /metrics from 127.0.0.1:port (HTTP/1.0: the server closes).
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string body;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request.data(), request.size()) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[16384];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof(buffer))) > 0) body.append(buffer, n);
    }
  }
  close(fd);
  return body;
}

// The sample of `family` whose labels include every `labels` pair (0 when
// there is none, as for a counter never incremented).
double Sample(const std::string& metrics, const std::string& family,
              const std::map<std::string, std::string>& labels) {
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, family + "{") &&
        !absl::StartsWith(line, family + " ")) {
      continue;
    }
    bool match = true;
    for (const auto& [k, v] : labels) {
      match &= absl::StrContains(line, absl::StrCat(k, "=\"", v, "\""));
    }
    double value = 0;
    const size_t space = line.rfind(' ');
    if (match && absl::SimpleAtod(line.substr(space + 1), &value)) return value;
  }
  return 0;
}

int Calls(const ServerProcess& server, const std::string& code) {
  return static_cast<int>(Sample(Scrape(server.metrics_port()),
                                 "diarization_requests_total",
                                 {{"method", "DiarizeFile"}, {"code", code}}));
}

std::shared_ptr<grpc::Channel> BalancedChannel(const std::string& target,
                                               const std::string& config) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (!config.empty()) args.SetServiceConfigJSON(config);
  // Re-resolve soon after a GOAWAY (gRPC's default waits 30 s between
  // resolutions); the name's TXT record is not asked for a service config.
  args.SetInt("grpc.dns_min_time_between_resolutions_ms", 200);
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

grpc::Status OneCall(v1::Diarization::Stub& stub, const std::string& audio) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(60));
  v1::DiarizeResult result;
  return server::testing::DiarizeFile(stub, RawConfig(), audio, &result,
                                      &context);
}

bool WaitForHealth(const ServerProcess& server,
                   grpc::health::v1::HealthCheckResponse::ServingStatus want,
                   double timeout_s) {
  auto health = grpc::health::v1::Health::NewStub(server.channel());
  const absl::Time end = absl::Now() + absl::Seconds(timeout_s);
  while (absl::Now() < end) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(client::kHealthServiceName);
    grpc::health::v1::HealthCheckResponse response;
    if (health->Check(&context, request, &response).ok() &&
        response.status() == want) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return false;
}

class MultiReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto models = RandomModelDir();
    ASSERT_TRUE(models.ok()) << models.status();
    models_ = *models;
  }
  std::string models_;
};

TEST_F(MultiReplicaTest, RoundRobinSpreadsAndDrainLosesNoCall) {
  constexpr int kReplicas = 3;
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < kReplicas; ++i) {
    auto s =
        ServerProcess::Start(models_, ServerFlags({"--drain_timeout_s=60"}));
    ASSERT_TRUE(s.ok()) << s.status();
    addresses.push_back((*s)->address());
    servers.push_back(*std::move(s));
  }
  const std::string target = "ipv4:" + absl::StrJoin(addresses, ",");
  auto channel = BalancedChannel(target, client::RoundRobinServiceConfig());
  auto stub = v1::Diarization::NewStub(channel);
  const std::string audio = RandomAudio(2.0);

  // 1. Spread: sequential calls go round the replicas.
  constexpr int kCalls = 12;
  for (int i = 0; i < kCalls; ++i) {
    grpc::Status s = OneCall(*stub, audio);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  std::vector<int> before(kReplicas);
  int total = 0;
  for (int i = 0; i < kReplicas; ++i) {
    before[i] = Calls(*servers[i], "OK");
    total += before[i];
    std::fprintf(stderr, "replica %d served %d of %d calls\n", i, before[i],
                 kCalls);
  }
  EXPECT_EQ(total, kCalls);
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_GE(before[i], 2) << "replica " << i << " got too few calls";
  }

  // 2. Open one stream per replica (round_robin places consecutive calls on
  // consecutive replicas), left open so the drained replica has work.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<
      grpc::ClientReaderWriter<v1::DiarizeRequest, v1::DiarizeResponse>>>
      streams;
  for (int i = 0; i < kReplicas; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(stub->Diarize(contexts.back().get()));
    ASSERT_TRUE(
        streams.back()->Write(server::testing::ConfigRequest(RawConfig())));
    v1::DiarizeRequest chunk;
    chunk.set_audio(audio);
    ASSERT_TRUE(streams.back()->Write(chunk));
  }
  int victim = -1;
  const absl::Time placed = absl::Now() + absl::Seconds(20);
  while (victim < 0 && absl::Now() < placed) {
    for (int i = 0; i < kReplicas && victim < 0; ++i) {
      if (Sample(Scrape(servers[i]->metrics_port()),
                 "diarization_active_streams", {}) >= 1) {
        victim = i;
      }
    }
    if (victim < 0) absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_GE(victim, 0) << "no replica shows an open stream";
  ServerProcess& drained = *servers[victim];

  // 3. Calls run without pause from before the SIGTERM to after it: none
  // may fail (health checking moves them; the retry covers the instant
  // before the client sees NOT_SERVING).
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0};
  std::vector<std::string> failures;
  std::thread caller([&] {
    auto own = v1::Diarization::NewStub(channel);
    while (!stop) {
      grpc::Status s = OneCall(*own, audio);
      if (s.ok()) {
        ++ok;
      } else {
        failures.push_back(
            absl::StrCat(s.error_code(), " ", s.error_message()));
      }
    }
  });
  absl::SleepFor(absl::Milliseconds(300));
  drained.Signal(SIGTERM);
  ASSERT_TRUE(WaitForHealth(
      drained, grpc::health::v1::HealthCheckResponse::NOT_SERVING, 10));
  // Let the health watch reach the client (milliseconds on an idle machine;
  // a margin for a loaded CI box), then count what the drained replica is
  // still sent.
  absl::SleepFor(absl::Seconds(1));
  const int refused_before = Calls(drained, "UNAVAILABLE");
  const int ok_before = ok;
  const absl::Time calls_end = absl::Now() + absl::Seconds(60);
  while (ok < ok_before + 2 * kReplicas && absl::Now() < calls_end) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  stop = true;
  caller.join();
  EXPECT_THAT(failures, ::testing::IsEmpty());
  EXPECT_EQ(Calls(drained, "UNAVAILABLE"), refused_before)
      << "the draining replica was still sent new calls after NOT_SERVING";
  std::fprintf(stderr,
               "during the drain: %d calls OK, %d refused by the draining "
               "replica before the client saw NOT_SERVING (retried)\n",
               ok.load(), refused_before);
  for (int i = 0; i < kReplicas; ++i) {
    if (i == victim) continue;
    EXPECT_GT(Calls(*servers[i], "OK"), before[i]) << "replica " << i;
  }

  // Control: the same target without health checking (and without retry)
  // keeps picking the draining replica, which refuses.
  {
    auto plain = BalancedChannel(
        target, R"({"loadBalancingConfig": [{"round_robin": {}}]})");
    auto plain_stub = v1::Diarization::NewStub(plain);
    int unavailable = 0;
    for (int i = 0; i < 2 * kReplicas; ++i) {
      unavailable +=
          OneCall(*plain_stub, audio).error_code() == grpc::UNAVAILABLE;
    }
    EXPECT_GE(unavailable, 1) << "without health checking the draining "
                                 "replica should still be picked";
  }

  // 4. The open streams, the drained replica's included, finish normally.
  for (int i = 0; i < kReplicas; ++i) {
    streams[i]->WritesDone();
    v1::DiarizeResponse response;
    bool got_final = false;
    while (streams[i]->Read(&response)) got_final |= response.has_final();
    grpc::Status s = streams[i]->Finish();
    EXPECT_TRUE(s.ok()) << "stream " << i << ": " << s.error_message();
    EXPECT_TRUE(got_final) << "stream " << i;
  }
  EXPECT_EQ(drained.Wait(), 0) << drained.Log();
  EXPECT_THAT(drained.Log(), HasSubstr("drain_finished"));
}

TEST_F(MultiReplicaTest, MaxConnectionAgeRebalancesOntoNewReplica) {
  const std::string name = "replicas.diarization.test";
  auto dns = FakeDnsServer::Start(name);
  ASSERT_TRUE(dns.ok()) << dns.status();
  const std::vector<std::string> age = {"--max_connection_age_s=2"};
  auto first = ServerProcess::Start(models_, ServerFlags(age));
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->grpc_port();
  (*dns)->SetAddresses({"127.0.0.1"});

  auto channel = BalancedChannel(
      absl::StrCat("dns://127.0.0.1:", (*dns)->port(), "/", name, ":", port),
      client::RoundRobinServiceConfig());
  auto stub = v1::Diarization::NewStub(channel);
  const std::string audio = RandomAudio(1.0);
  for (int i = 0; i < 3; ++i) {
    grpc::Status s = OneCall(*stub, audio);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_EQ(Calls(**first, "OK"), 3);

  // A second replica on another loopback address, same port, published in
  // DNS after the client connected.
  std::vector<std::string> flags = age;
  flags.push_back(absl::StrCat("--listen=127.0.0.2:", port));
  auto second = ServerProcess::Start(models_, ServerFlags(flags));
  ASSERT_TRUE(second.ok()) << second.status();
  const int queries_before = (*dns)->a_queries();
  (*dns)->SetAddresses({"127.0.0.1", "127.0.0.2"});

  // The client's connection to the first replica is aged out (GOAWAY), the
  // name is resolved again and round_robin takes both.
  int failed = 0;
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (Calls(**second, "OK") < 2 && absl::Now() < end) {
    failed += !OneCall(*stub, audio).ok();
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_GE(Calls(**second, "OK"), 2)
      << "the long-lived client never used the replica started later";
  EXPECT_GT((*dns)->a_queries(), queries_before) << "no re-resolution";
  EXPECT_EQ(failed, 0) << "calls failed while connections were aged out";
}

}  // namespace
}  // namespace diarization::testing
