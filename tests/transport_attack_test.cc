// Issue 39's attacks on the transport, against the real diarization_server
// binary (CPU backend, random weights, 127.0.0.1 only), each scaled down to
// run in seconds on a shared 2-core machine but keeping the mechanism that
// failed: a live stream beside a bulk upload (finding 6), clients that never
// read their responses (1), a connection flood that exhausts descriptors
// (2), slowloris on the metrics port (3), oversized headers (4) and HTTP/2
// rapid reset (5; from several connections at once through the proxy in
// deploy/proxy, which the server alone does not survive). Each test starts its
// own server, bounds every call and connection in time, and kills only the
// server it started; DIARIZATION_SERVER_UNDER_TEST runs them against another
// build (the one before the fixes, to see them fail: docs/reliability.md).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "tests/attack_clients.h"
#include "tests/raw_http2.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using server::testing::ConfigRequest;
using ::testing::HasSubstr;

constexpr char kDiarize[] = "/diarization.v1.Diarization/Diarize";

class TransportAttack : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags, int max_open_files = 0) {
    auto models = RandomModelDir();
    ASSERT_TRUE(models.ok()) << models.status();
    flags.push_back("--threads=1");
    // A build from before these flags ignores them (to see it fail).
    flags.push_back(
        "--undefok=write_timeout_s,max_connections,max_connections_per_peer,"
        "max_metadata_bytes,log_lines_per_s,log_burst_lines,"
        "metrics_request_timeout_s,metrics_connection_limit,"
        "metrics_per_ip_connection_limit,max_resets_per_s");
    auto server = ServerProcess::Start(*models, flags, nullptr, max_open_files);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  std::unique_ptr<ServerProcess> server_;
};

// A fresh connection's health check, answered within `timeout_s`.
bool HealthyOnNewConnection(const ServerProcess& server, double timeout_s) {
  auto channel = OwnConnection(server, 5000 + std::rand() % 100000);
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(In(timeout_s));
  grpc::health::v1::HealthCheckResponse response;
  return health->Check(&context, {}, &response).ok() &&
         response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// A Diarize config + audio as the raw client sends them.
std::string ConfigMessage(const std::string& id, bool partials) {
  v1::DiarizationConfig c = RawConfig(id);
  if (partials) {
    c.mutable_options()->set_partial_results(true);
    c.mutable_options()->set_partial_interval_s(1);
  }
  return ConfigRequest(c).SerializeAsString();
}

std::string AudioMessage(double seconds, uint64_t salt) {
  v1::DiarizeRequest r;
  r.set_audio(Pcm(seconds, salt));
  return r.SerializeAsString();
}

int CountLines(const std::string& log, const std::string& needle) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, needle)) ++n;
  }
  return n;
}

// The bound for a victim beside an attack: its final result within
// 2 s of its end, or 3 × its latency alone + 1 s on a loaded machine, on its
// first try, with the RTTM it gets alone.
void ExpectVictimServed(const VictimOutcome& victim, const VictimOutcome& alone,
                        const char* what) {
  ASSERT_TRUE(victim.status.ok())
      << "the victim was refused or failed during the attack: "
      << victim.status.error_message();
  ASSERT_TRUE(victim.final_result.has_value());
  const double bound = std::max(2.0, 3 * alone.final_after_end_s + 1.0);
  std::fprintf(stderr,
               "%s: final result %.3f s after its end (alone: %.3f s, "
               "bound %.3f s)\n",
               what, victim.final_after_end_s, alone.final_after_end_s, bound);
  EXPECT_LE(victim.final_after_end_s, bound)
      << "the victim's final result came too late";
  EXPECT_EQ(victim.final_result->rttm(), alone.final_result->rttm())
      << "the victim's RTTM changed under the attack";
}

// Finding 6: on the CPU, a live stream beside one bulk upload waited 9-16 s
// for its final result (0.25-0.39 s alone), because CPU batches were 32
// windows while the CPU networks run 4 at a time. Default batch flags here.
// Bound: the 3 × its latency alone + 1 s on a loaded machine, and
// its RTTM byte-identical to the same audio served alone.
TEST_F(TransportAttack, LiveStreamBesideABulkUploadKeepsItsLatency) {
  StartServer({});
  const VictimOutcome alone = PacedStream(*server_, 6, "victim");
  ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
  ASSERT_TRUE(alone.final_result.has_value());
  // 60 s: 51 windows, more than a whole batch of 32.
  const std::string bulk = Pcm(60, 5);
  grpc::ClientContext upload_context;
  upload_context.set_deadline(In(120));
  std::thread upload([&] {
    auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 1));
    v1::DiarizeResult result;
    server::testing::DiarizeFile(*stub, RawConfig("bulk"), bulk, &result,
                                 &upload_context)
        .IgnoreError();
  });
  ASSERT_TRUE(WaitFor(
      *server_, [](const v1::ServerInfo& i) { return i.active_jobs() >= 1; },
      30));
  absl::SleepFor(absl::Seconds(2));  // the upload's windows are queued
  const VictimOutcome victim = PacedStream(*server_, 6, "victim");
  upload_context.TryCancel();
  upload.join();
  ASSERT_TRUE(victim.status.ok()) << victim.status.error_message();
  ASSERT_TRUE(victim.final_result.has_value());
  std::fprintf(stderr,
               "live stream beside a 60 s upload: final %.3f s after its end "
               "(alone %.3f s)\n",
               victim.final_after_end_s, alone.final_after_end_s);
  EXPECT_LE(victim.final_after_end_s, 3 * alone.final_after_end_s + 1.0)
      << "the live stream waited behind the bulk upload's batches";
  EXPECT_EQ(victim.final_result->rttm(), alone.final_result->rttm())
      << "the live stream's RTTM changed beside the upload";
  ExpectOnlyJsonLines(*server_);
}

// Finding 1: streams that sent their audio but keep their receive window at
// 0 (answering pings) never take their final result: the server's write
// never completes and the call kept its slot for ever. With
// --write_timeout_s=2 each must end within a few seconds of its result,
// with a log line that says why, and give its slot back.
TEST_F(TransportAttack, ClientsThatNeverReadAreEndedAndFreeTheirSlots) {
  StartServer({"--write_timeout_s=2"});
  constexpr int kClients = 4;
  std::vector<std::unique_ptr<RawHttp2Connection>> clients;
  for (int i = 0; i < kClients; ++i) {
    auto c = RawHttp2Connection::Connect("127.0.0.1", server_->grpc_port(),
                                         /*initial_window=*/0);
    ASSERT_TRUE(c.ok()) << c.status();
    const int stream = (*c)->StartCall(kDiarize);
    // 1.5 s of audio (48 KB): within the server's first 64 KiB window.
    ASSERT_TRUE((*c)->SendMessage(
        stream, ConfigMessage(absl::StrCat("unread-", i), true), false));
    ASSERT_TRUE((*c)->SendMessage(stream, AudioMessage(1.5, 10 + i), true));
    clients.push_back(*std::move(c));
  }
  ASSERT_TRUE(WaitFor(
      *server_, [](const v1::ServerInfo& i) { return i.open_calls() >= 1; },
      10));
  // Their jobs take a few seconds on one CPU thread; then 2 s of unread
  // final. Before the fix they were still open after this.
  const absl::Time start = absl::Now();
  const bool freed = WaitFor(
      *server_, [](const v1::ServerInfo& i) { return i.open_calls() == 0; },
      40);
  std::fprintf(stderr, "unread streams: %s after %.1f s\n",
               freed ? "all ended" : "STILL OPEN",
               absl::ToDoubleSeconds(absl::Now() - start));
  EXPECT_TRUE(freed) << "calls whose responses are never read keep their "
                        "slots";
  const std::string log = server_->Log();
  EXPECT_EQ(CountLines(log, "waited unread"), kClients) << log;
  // A client on its own connection is served meanwhile and after.
  const VictimOutcome victim = PacedStream(*server_, 3, "after");
  EXPECT_TRUE(victim.status.ok()) << victim.status.error_message();
  ExpectOnlyJsonLines(*server_);
}

// Finding 2: a flood that reaches the process's open-file limit made Debian's
// gRPC 1.51 stop accepting for good (CVE-2023-4785). With the server's
// RLIMIT_NOFILE at 256 (soft = hard), 400 connections at once; once they
// are closed a new client must be served within 2 s.
TEST_F(TransportAttack, ListenerRecoversAfterADescriptorFlood) {
  StartServer({}, /*max_open_files=*/256);
  std::vector<int> sockets;
  for (int i = 0; i < 400; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << "the test's own descriptors";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->grpc_port()));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      continue;
    }
    sockets.push_back(fd);
  }
  absl::SleepFor(absl::Seconds(1));  // the server accepts what it can
  for (int fd : sockets) close(fd);
  const absl::Time released = absl::Now();
  // Served within 2 s of the release (a few tries: the first may race the
  // server's closing of the flood's sockets).
  bool served = false;
  while (!served && absl::Now() < released + absl::Seconds(2)) {
    served = HealthyOnNewConnection(*server_, 1.0);
  }
  std::fprintf(stderr, "after the flood: %s %.2f s after the release\n",
               served ? "served" : "NOT served",
               absl::ToDoubleSeconds(absl::Now() - released));
  EXPECT_TRUE(served) << "the listener did not recover";
  const VictimOutcome victim = PacedStream(*server_, 3, "after-flood");
  EXPECT_TRUE(victim.status.ok()) << victim.status.error_message();
  ExpectOnlyJsonLines(*server_);
}

// Finding 2, per peer: one address holds at most --max_connections_per_peer
// connections; its extra ones are closed at once, another address is served.
TEST_F(TransportAttack, ConnectionsPerPeerAreCapped) {
  StartServer({"--max_connections_per_peer=4"});
  std::vector<std::unique_ptr<RawHttp2Connection>> flood;
  for (int i = 0; i < 12; ++i) {
    auto c = RawHttp2Connection::Connect("127.0.0.1", server_->grpc_port(),
                                         65535, "127.0.0.3");
    if (c.ok()) flood.push_back(*std::move(c));
  }
  absl::SleepFor(absl::Seconds(1));
  int closed = 0;
  for (const auto& c : flood) closed += c->closed() ? 1 : 0;
  std::fprintf(stderr, "per-peer cap: %d of %zu closed\n", closed,
               flood.size());
  EXPECT_GE(closed, static_cast<int>(flood.size()) - 4)
      << "one address kept more than its cap";
  EXPECT_TRUE(HealthyOnNewConnection(*server_, 2.0));
  ExpectOnlyJsonLines(*server_);
}

// Finding 3: a request trickled one byte at a time is never idle, so
// libmicrohttpd's idle timeout never closed it. With
// --metrics_request_timeout_s=2, trickling connections are closed within a
// few seconds; meanwhile the gRPC port answers, and a scrape succeeds.
TEST_F(TransportAttack, MetricsSlowlorisIsCutAndScrapesGoOn) {
  StartServer({"--metrics_request_timeout_s=2"});
  constexpr int kTricklers = 6;
  std::vector<int> fds;
  for (int i = 0; i < kTricklers; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->metrics_port()));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string start = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ";
    send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  // Trickle one byte per 300 ms on each for up to 10 s; note when each is
  // closed by the server.
  std::vector<double> closed_after(kTricklers, -1);
  const absl::Time start = absl::Now();
  while (absl::Now() < start + absl::Seconds(10)) {
    int open = 0;
    for (int i = 0; i < kTricklers; ++i) {
      if (closed_after[i] >= 0) continue;
      pollfd p{.fd = fds[i], .events = POLLIN};
      char c;
      if ((poll(&p, 1, 0) > 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) <= 0) ||
          send(fds[i], "a", 1, MSG_NOSIGNAL) < 0) {
        closed_after[i] = absl::ToDoubleSeconds(absl::Now() - start);
        continue;
      }
      ++open;
    }
    if (open == 0) break;
    absl::SleepFor(absl::Milliseconds(300));
  }
  EXPECT_TRUE(HealthyOnNewConnection(*server_, 2.0));
  for (int i = 0; i < kTricklers; ++i) {
    std::fprintf(stderr, "trickler %d closed after %.1f s\n", i,
                 closed_after[i]);
    EXPECT_GE(closed_after[i], 0) << "a trickled request kept its connection";
    EXPECT_LE(closed_after[i], 5.0);
    close(fds[i]);
  }
  // A scrape right after.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->metrics_port()));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string get =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  send(fd, get.data(), get.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[4096];
  pollfd p{.fd = fd, .events = POLLIN};
  while (poll(&p, 1, 3000) > 0) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  EXPECT_THAT(reply, HasSubstr("200 OK"));
  ExpectOnlyJsonLines(*server_);
}

// Finding 5: a client opens and resets Diarize streams as fast as it can
// for 4 s, connecting again whenever its connection is closed. A connection
// that resets more than --max_resets_per_s (default 100) calls in a second
// must be closed; one connection holds at most --max_streams_per_connection
// (16) of the --max_concurrent_streams (32) slots, however fast it resets,
// and each reset call gives its slot back at once: a victim on another
// connection is admitted on its first try and served within the issue's
// bound (2 s of its end, or 3 × its latency alone + 1 s on a loaded
// machine), with the RTTM it gets alone; the cancels do not each write a
// log line.
TEST_F(TransportAttack, RapidResetNeitherLocksOthersOutNorFloodsTheLog) {
  // Connections resetting at once (each reconnecting when closed).
  constexpr int kAttackers = 1;
  StartServer({"--max_concurrent_streams=32"});
  const VictimOutcome alone = PacedStream(*server_, 4, "victim");
  ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
  ASSERT_TRUE(alone.final_result.has_value());
  std::atomic<bool> stop{false};
  std::atomic<int> resets{0}, connections{0}, closed_by_server{0};
  auto attack = [&] {
    const std::string config = ConfigMessage("reset", false);
    const absl::Time end = absl::Now() + absl::Seconds(4);
    while (!stop && absl::Now() < end) {
      auto c =
          RawHttp2Connection::Connect("127.0.0.1", server_->grpc_port(), 65535);
      if (!c.ok()) {
        absl::SleepFor(absl::Milliseconds(10));
        continue;
      }
      ++connections;
      while (!stop && absl::Now() < end && !(*c)->closed()) {
        const int s = (*c)->StartCall(kDiarize);
        (*c)->SendMessage(s, config, false);
        if (!(*c)->Reset(s)) break;
        ++resets;
      }
      if ((*c)->closed() || (*c)->goaway()) ++closed_by_server;
    }
  };
  std::vector<std::thread> attacker_threads;
  for (int i = 0; i < kAttackers; ++i) attacker_threads.emplace_back(attack);
  absl::SleepFor(absl::Milliseconds(300));
  // Beside the victim, every 50 ms a stream that sends nothing, on a third
  // connection, for the whole attack: admitted, it ends INVALID_ARGUMENT
  // ("ended before its first DiarizeRequest", no job); refused, it ends
  // RESOURCE_EXHAUSTED. Each is a chance for the flood to hold every slot
  // (the victim's admission is one instant).
  std::atomic<int> probes{0}, probes_refused{0};
  std::string probe_refusal;
  std::thread prober([&] {
    auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 2000));
    while (!stop) {
      grpc::ClientContext context;
      context.set_deadline(In(10));
      auto stream = stub->Diarize(&context);
      stream->WritesDone();
      const grpc::Status s = stream->Finish();
      ++probes;
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          probes_refused++ == 0) {
        probe_refusal = s.error_message();
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  });
  // One try: a refusal ("32 are open") fails the test.
  const VictimOutcome victim = PacedStream(*server_, 4, "victim");
  stop = true;
  const absl::Time stopped = absl::Now();
  for (std::thread& t : attacker_threads) t.join();
  prober.join();
  std::fprintf(stderr, "probes: %d streams, %d refused %s\n", probes.load(),
               probes_refused.load(), probe_refusal.c_str());
  EXPECT_EQ(probes_refused.load(), 0)
      << "a stream on another connection was refused during the attack: "
      << probe_refusal;
  std::fprintf(stderr,
               "rapid reset: %d streams reset on %d connections, %d closed "
               "by the server; the attacker stopped in %.1f s\n",
               resets.load(), connections.load(), closed_by_server.load(),
               absl::ToDoubleSeconds(absl::Now() - stopped));
  EXPECT_GE(closed_by_server.load(), 1)
      << "a connection resetting thousands of streams was kept open";
  ExpectVictimServed(victim, alone, "victim");
  const absl::Time idle_wait = absl::Now();
  EXPECT_TRUE(WaitFor(*server_, Idle, 10)) << "reset calls were left open";
  std::fprintf(stderr, "idle %.1f s after the attack\n",
               absl::ToDoubleSeconds(absl::Now() - idle_wait));
  const int lines = static_cast<int>(LogLines(*server_, "Diarize").size());
  std::fprintf(stderr, "Diarize log lines: %d for %d resets\n", lines,
               resets.load());
  // The burst (200) and 20 a second per status code, for a few codes.
  EXPECT_LE(lines, 800) << "every reset call wrote a log line";
  ExpectOnlyJsonLines(*server_);
}

// A free TCP port on 127.0.0.1 (bound, then released for the caller).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// deploy/proxy/haproxy.cfg in front of `backend_port`, run by Debian's
// haproxy in the foreground; killed (its PID only) when destroyed.
class Proxy {
 public:
  static std::unique_ptr<Proxy> Start(int backend_port) {
    auto p = std::make_unique<Proxy>();
    p->port_ = FreePort();
    const std::string log = NewTempDir("proxy") + "/haproxy.log";
    const std::string config = Runfile("deploy/proxy/haproxy.cfg");
    const std::string bind = absl::StrCat("127.0.0.1:", p->port_);
    const std::string backend = absl::StrCat("127.0.0.1:", backend_port);
    p->pid_ = fork();
    if (p->pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        dup2(fd, STDOUT_FILENO);
      }
      setenv("PROXY_BIND", bind.c_str(), 1);
      setenv("BACKEND_ADDR", backend.c_str(), 1);
      execl("/usr/sbin/haproxy", "haproxy", "-db", "-f", config.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    p->log_ = log;
    // Up when it accepts a connection (5 s at most).
    const absl::Time end = absl::Now() + absl::Seconds(5);
    while (absl::Now() < end) {
      auto c = RawHttp2Connection::Connect("127.0.0.1", p->port_, 65535);
      if (c.ok()) return p;
      absl::SleepFor(absl::Milliseconds(50));
    }
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    std::fprintf(stderr, "haproxy did not start; its log:\n%s\n",
                 text.str().c_str());
    return nullptr;
  }
  ~Proxy() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

// Finding 4: a header list sent in endless CONTINUATION frames. gRPC 1.51
// reads it to its end (CVE-2023-33953): the server alone takes 8 MB of one
// header on one connection. The front proxy of deploy/proxy (haproxy) must
// close such a connection within its 16 KiB buffer, and still pass gRPC
// calls through to the server.
TEST_F(TransportAttack, ProxyClosesOversizedHeaders) {
  StartServer({});
  std::unique_ptr<Proxy> proxy = Proxy::Start(server_->grpc_port());
  ASSERT_NE(proxy, nullptr) << "haproxy did not start (scripts/install_deps.sh "
                               "installs it)";
  // gRPC through the proxy.
  {
    auto channel =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", proxy->port()),
                            grpc::InsecureChannelCredentials());
    auto stub = v1::Diarization::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(In(60));
    v1::DiarizeResult result;
    const grpc::Status s = server::testing::DiarizeFile(
        *stub, RawConfig("via-proxy"), Pcm(3, 42), &result, &context);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_NEAR(result.audio_s(), 3, 1e-3);
  }
  constexpr size_t kTotal = 8 << 20;
  auto direct =
      RawHttp2Connection::Connect("127.0.0.1", server_->grpc_port(), 65535);
  ASSERT_TRUE(direct.ok()) << direct.status();
  absl::Time start = absl::Now();
  const size_t direct_sent = (*direct)->SendEndlessHeader(1, 16000, kTotal);
  std::fprintf(stderr,
               "oversized header, the server alone: %.1f MB taken in %.1f s, "
               "connection %s\n",
               direct_sent / 1e6, absl::ToDoubleSeconds(absl::Now() - start),
               (*direct)->closed() ? "closed" : "still open");
  direct->reset();
  auto via = RawHttp2Connection::Connect("127.0.0.1", proxy->port(), 65535);
  ASSERT_TRUE(via.ok()) << via.status();
  start = absl::Now();
  const size_t via_sent = (*via)->SendEndlessHeader(1, 16000, kTotal);
  // The proxy's close may reach the client after a few more frames.
  const absl::Time end = absl::Now() + absl::Seconds(2);
  while (!(*via)->closed() && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::fprintf(stderr,
               "oversized header, through the proxy: %.3f MB taken in %.2f s, "
               "connection %s\n",
               via_sent / 1e6, absl::ToDoubleSeconds(absl::Now() - start),
               (*via)->closed() ? "closed" : "still open");
  EXPECT_TRUE((*via)->closed()) << "the proxy kept reading the header";
  // (What the socket took counts the kernel's buffers too, megabytes on
  // loopback: the proxy closed before all of it was sent.)
  EXPECT_LT(via_sent, kTotal);
  EXPECT_TRUE(HealthyOnNewConnection(*server_, 2.0));
  ExpectOnlyJsonLines(*server_);
}

// Finding 5 from several connections at once, which the server alone does
// not survive (docs/reliability.md: gRPC 1.51 spends its own threads on the
// resets before the server's code sees them; victims refused or 10-16 s
// late), with deploy/proxy/haproxy.cfg in front as docs/operations.md
// prescribes: three connections from another address (127.0.0.3) open and
// reset streams through the proxy as fast as they can for 4 s; a victim
// through the proxy is served within the same bound as without the proxy,
// with the RTTM it gets alone.
TEST_F(TransportAttack, RapidResetFromSeveralConnectionsStopsAtTheProxy) {
  constexpr int kAttackers = 3;
  StartServer({"--max_concurrent_streams=32"});
  std::unique_ptr<Proxy> proxy = Proxy::Start(server_->grpc_port());
  ASSERT_NE(proxy, nullptr) << "haproxy did not start (scripts/install_deps.sh "
                               "installs it)";
  const std::string via = absl::StrCat("127.0.0.1:", proxy->port());
  const VictimOutcome alone = PacedStreamTo(via, 4, "victim");
  ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
  ASSERT_TRUE(alone.final_result.has_value());
  std::atomic<bool> stop{false};
  std::atomic<int> resets{0}, connections{0};
  auto attack = [&] {
    const std::string config = ConfigMessage("reset", false);
    const absl::Time end = absl::Now() + absl::Seconds(4);
    while (!stop && absl::Now() < end) {
      auto c = RawHttp2Connection::Connect("127.0.0.1", proxy->port(), 65535,
                                           "127.0.0.3");
      if (!c.ok()) {
        absl::SleepFor(absl::Milliseconds(10));
        continue;
      }
      ++connections;
      while (!stop && absl::Now() < end && !(*c)->closed()) {
        const int s = (*c)->StartCall(kDiarize);
        (*c)->SendMessage(s, config, false);
        if (!(*c)->Reset(s)) break;
        ++resets;
      }
    }
  };
  std::vector<std::thread> attackers;
  for (int i = 0; i < kAttackers; ++i) attackers.emplace_back(attack);
  absl::SleepFor(absl::Milliseconds(300));
  const VictimOutcome victim = PacedStreamTo(via, 4, "victim");
  stop = true;
  for (std::thread& t : attackers) t.join();
  const std::string log = server_->Log();
  std::fprintf(stderr,
               "rapid reset through the proxy: %d streams reset on %d "
               "connections; the server logged %d Diarize lines, %d "
               "reset_flood\n",
               resets.load(), connections.load(), CountLines(log, "Diarize"),
               CountLines(log, "reset_flood"));
  ExpectVictimServed(victim, alone, "victim through the proxy");
  EXPECT_TRUE(WaitFor(*server_, Idle, 10)) << "reset calls were left open";
  ExpectOnlyJsonLines(*server_);
}

}  // namespace
}  // namespace diarization::testing
