#include "server/metrics_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace diarization::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A loopback socket listening on a kernel-chosen port; closed on destruction.
class TakenPort {
 public:
  TakenPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
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

// Fetches http://127.0.0.1:port/metrics with a bare HTTP/1.0 request.
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, n);
  }
  close(fd);
  return response;
}

TEST(MetricsExposerTest, ServesRegisteredMetricsOnAFreePort) {
  auto exposer = StartMetricsExposer("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("exposer_test_total")
      .Help("test")
      .Register(*registry)
      .Add({})
      .Increment(3);
  (*exposer)->RegisterCollectable(registry);
  const std::vector<int> ports = (*exposer)->GetListeningPorts();
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_GT(ports[0], 0);
  EXPECT_THAT(Scrape(ports[0]), HasSubstr("exposer_test_total 3"));
}

TEST(MetricsExposerTest, TakenPortSaysWhyNotJustNullContext) {
  TakenPort taken;
  const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
  auto exposer = StartMetricsExposer(listen);
  ASSERT_FALSE(exposer.ok());
  EXPECT_EQ(exposer.status().code(), absl::StatusCode::kUnavailable);
  const std::string message(exposer.status().message());
  EXPECT_THAT(message, HasSubstr(listen));
  // civetweb's own reason (errno text of bind), not prometheus-cpp's generic
  // exception text.
  EXPECT_THAT(message, HasSubstr("Address already in use"));
  EXPECT_THAT(message, Not(HasSubstr("null context")));
}

TEST(MetricsExposerTest, UnparsableAddressIsAnError) {
  auto exposer = StartMetricsExposer("not-an-address:port");
  ASSERT_FALSE(exposer.ok());
  EXPECT_THAT(std::string(exposer.status().message()),
              HasSubstr("not-an-address:port"));
}

TEST(MetricsExposerTest, WorksAgainAfterAFailure) {
  TakenPort taken;
  ASSERT_FALSE(
      StartMetricsExposer(absl::StrCat("127.0.0.1:", taken.port())).ok());
  auto exposer = StartMetricsExposer("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status();
}

}  // namespace
}  // namespace diarization::server
