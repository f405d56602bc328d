#include "server/metrics_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "server/auth/token_file.h"
#include "server/auth/token_store.h"

// A large thread-local, so that this test binary's static TLS (~256 KiB) is
// larger than the CUDA server's (cuBLASLt + OpenBLAS, ~175 KiB). civetweb's
// fixed 100 KiB thread stacks could not start here; the endpoint must.
thread_local char g_large_static_tls[256 << 10];

namespace diarization::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A loopback socket listening on a kernel-chosen port; closed on destruction.
class TakenPort {
 public:
  TakenPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Sends `request` to 127.0.0.1:port and returns the whole response.
std::string Http(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, n);
  }
  close(fd);
  return response;
}

std::string Get(int port, const std::string& path) {
  return Http(port, absl::StrCat("GET ", path, " HTTP/1.0\r\n\r\n"));
}

std::shared_ptr<prometheus::Registry> CounterRegistry(const std::string& name,
                                                      double value) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name(name)
      .Help("test")
      .Register(*registry)
      .Add({})
      .Increment(value);
  return registry;
}

TEST(MetricsEndpointTest, ServesEveryCollectableDespiteLargeStaticTls) {
  g_large_static_tls[std::random_device{}() % sizeof(g_large_static_tls)] = 1;
  const double a = std::random_device{}() % 1000 + 1;
  auto first = CounterRegistry("endpoint_test_a_total", a);
  auto second = CounterRegistry("endpoint_test_b_total", 7);
  auto endpoint =
      MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {first, second});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  ASSERT_GT((*endpoint)->port(), 0);
  const std::string response = Get((*endpoint)->port(), "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(response, HasSubstr(absl::StrCat("endpoint_test_a_total ", a)));
  EXPECT_THAT(response, HasSubstr("endpoint_test_b_total 7"));
}

TEST(MetricsEndpointTest, ExpiredCollectablesAreSkipped) {
  auto kept = CounterRegistry("endpoint_test_kept_total", 1);
  auto dropped = CounterRegistry("endpoint_test_dropped_total", 1);
  auto endpoint =
      MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {kept, dropped});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  dropped.reset();
  const std::string text = (*endpoint)->Render();
  EXPECT_THAT(text, HasSubstr("endpoint_test_kept_total 1"));
  EXPECT_THAT(text, Not(HasSubstr("endpoint_test_dropped_total")));
}

TEST(MetricsEndpointTest, OtherPathsAndMethodsAreRefused) {
  auto endpoint = MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  EXPECT_THAT(Get(port, "/"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get(port, "/metrics/x"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Http(port,
                   "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\n"
                   "abc"),
              StartsWith("HTTP/1.1 405"));
}

std::string GetWith(int port, const std::string& path,
                    const std::string& header) {
  return Http(port,
              absl::StrCat("GET ", path, " HTTP/1.0\r\n", header, "\r\n\r\n"));
}

std::string RandomToken() {
  std::mt19937_64 rng(std::random_device{}());
  std::string t;
  for (int i = 0; i < 32; ++i) t += "abcdefghijklmnopqrstuvwxyz"[rng() % 26];
  return t;
}

TEST(MetricsEndpointTest, TokensGuardMetricsButNotHealth) {
  const std::string scrape = RandomToken(), other = RandomToken();
  absl::StatusOr<auth::TokenTable> table = auth::ParseTokenFile(
      absl::StrCat(R"({"tokens": [{"name": "prom", "token": ")", scrape,
                   R"(", "methods": ["metrics"]}, {"name": "app", "token": ")",
                   other, R"(", "methods": ["Diarize", "GetInfo"]}]})"));
  ASSERT_TRUE(table.ok()) << table.status();
  auto registry = CounterRegistry("endpoint_test_guarded_total", 3);
  auto endpoint = MetricsEndpoint::Start(
      {.listen = "127.0.0.1:0",
       .tokens = auth::TokenStore::FromTable(*std::move(table))},
      {registry});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();

  const std::string none = Get(port, "/metrics");
  EXPECT_THAT(none, StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(none, HasSubstr("WWW-Authenticate: Bearer"));
  EXPECT_THAT(none, Not(HasSubstr("endpoint_test_guarded_total")));
  EXPECT_THAT(
      GetWith(port, "/metrics", "Authorization: Bearer " + RandomToken()),
      StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(GetWith(port, "/metrics", "Authorization: Basic " + scrape),
              StartsWith("HTTP/1.1 401"));
  const std::string denied =
      GetWith(port, "/metrics", "Authorization: Bearer " + other);
  EXPECT_THAT(denied, StartsWith("HTTP/1.1 403"));
  EXPECT_THAT(denied, Not(HasSubstr(other)));
  const std::string ok =
      GetWith(port, "/metrics", "Authorization: Bearer " + scrape);
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(ok, HasSubstr("endpoint_test_guarded_total 3"));

  // /healthz: no token needed; 404 until the server hooks its health in.
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 404"));
  std::atomic<bool> serving{false};
  (*endpoint)->SetHealthCheck([&serving] { return serving.load(); });
  const std::string not_serving = Get(port, "/healthz");
  EXPECT_THAT(not_serving, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(not_serving, HasSubstr("NOT_SERVING"));
  serving = true;
  const std::string serving_reply = Get(port, "/healthz");
  EXPECT_THAT(serving_reply, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(serving_reply, HasSubstr("SERVING"));
  (*endpoint)->SetHealthCheck(nullptr);
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 404"));
}

TEST(MetricsEndpointTest, TakenPortSaysWhy) {
  TakenPort taken;
  const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
  auto endpoint = MetricsEndpoint::Start({.listen = listen}, {});
  ASSERT_FALSE(endpoint.ok());
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kUnavailable);
  const std::string message(endpoint.status().message());
  EXPECT_THAT(message, HasSubstr(listen));
  EXPECT_THAT(message, HasSubstr("Address already in use"));
  // And the next attempt on a free port works.
  EXPECT_TRUE(MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {}).ok());
}

TEST(MetricsEndpointTest, BadAddressesAreInvalidArguments) {
  for (const std::string listen :
       {"9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:http", "[::1:9464",
        "no.such.host.invalid:9464"}) {
    auto endpoint = MetricsEndpoint::Start({.listen = listen}, {});
    ASSERT_FALSE(endpoint.ok()) << listen;
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument)
        << listen << ": " << endpoint.status();
    EXPECT_THAT(std::string(endpoint.status().message()), HasSubstr(listen));
  }
}

TEST(MetricsEndpointTest, AllInterfacesAndIpv6Loopback) {
  auto any = MetricsEndpoint::Start({.listen = ":0"}, {});
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_THAT(Get((*any)->port(), "/metrics"), StartsWith("HTTP/1.1 200"));
  auto v6 = MetricsEndpoint::Start({.listen = "[::1]:0"}, {});
  // Machines without IPv6 cannot bind ::1; that is an UNAVAILABLE, not a
  // crash or a wrong address.
  if (!v6.ok()) {
    EXPECT_EQ(v6.status().code(), absl::StatusCode::kUnavailable)
        << v6.status();
  } else {
    EXPECT_GT((*v6)->port(), 0);
  }
}

// A busy server holds many descriptors (gRPC connections, files); a scrape
// arriving on descriptor >= 1024 must still be answered (select() cannot
// watch it; the endpoint must use poll/epoll).
TEST(MetricsEndpointTest, ServesWhenDescriptorsExceedFdSetSize) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  ASSERT_GE(limit.rlim_max, rlim_t{1200})
      << "this test needs a descriptor limit of at least 1200";
  const rlim_t saved = limit.rlim_cur;
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, 1200);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  auto registry = CounterRegistry("endpoint_test_many_fds_total", 5);
  auto endpoint = MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {registry});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  std::vector<int> held;
  while (held.empty() || held.back() < 1100) {
    const int fd = open("/dev/null", O_RDONLY);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  const std::string response = Get((*endpoint)->port(), "/metrics");
  for (int fd : held) close(fd);
  limit.rlim_cur = saved;
  setrlimit(RLIMIT_NOFILE, &limit);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("endpoint_test_many_fds_total 5"));
}

// Opens a TCP connection from `source` (a loopback address such as
// 127.0.0.2: Linux routes all of 127/8 to lo) to 127.0.0.1:port and sends
// nothing. -1 on failure.
int IdleConnection(const char* source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Issue 13: about 1020 idle connections (libmicrohttpd's default limit,
// FD_SETSIZE - 4) shut the endpoint off. One address may now hold only a
// few, idle ones are dropped, and a scrape from elsewhere is answered.
TEST(MetricsEndpointTest, IdleConnectionsCannotBlockScrapes) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  ASSERT_GE(limit.rlim_max, rlim_t{1400});
  const rlim_t saved = limit.rlim_cur;
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, 1400);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  auto registry = CounterRegistry("endpoint_test_idle_total", 3);
  auto endpoint = MetricsEndpoint::Start(
      {.listen = "127.0.0.1:0", .connection_timeout_s = 2}, {registry});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  std::vector<int> idle;
  for (int i = 0; i < 1100; ++i) {
    const int fd = IdleConnection("127.0.0.2", port);
    if (fd >= 0) idle.push_back(fd);
  }
  // The kernel completes connects the endpoint then closes at once.
  EXPECT_GE(idle.size(), 1000u);
  const std::string response = Get(port, "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("endpoint_test_idle_total 3"));
  // Within the timeout (plus slack) every idle connection has been closed
  // by the endpoint: a read returns end-of-file or an error, never blocks.
  sleep(4);
  int closed = 0;
  for (int fd : idle) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    char byte;
    const ssize_t n = read(fd, &byte, 1);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    close(fd);
  }
  EXPECT_EQ(closed, static_cast<int>(idle.size()));
  limit.rlim_cur = saved;
  setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace
}  // namespace diarization::server
