// The Prometheus scrape endpoint: GET /metrics in the text exposition format,
// served by libmicrohttpd from prometheus-cpp collectables.
//
// Why not prometheus-cpp's own Exposer: it runs on civetweb, and Debian's
// civetweb creates its threads with a fixed 100 KiB stack. glibc refuses
// (EINVAL) a stack smaller than the process's static TLS, and the CUDA
// server's libraries (cuBLASLt 94 KiB, OpenBLAS 60 KiB) exceed it, so the
// CUDA server could not serve metrics at all ("Cannot create threads").
// libmicrohttpd lets us choose the stack size (ADR 0063).
#ifndef DIARIZATION_SERVER_METRICS_ENDPOINT_H_
#define DIARIZATION_SERVER_METRICS_ENDPOINT_H_

#include <cstdarg>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"

struct MHD_Daemon;

namespace diarization::server {

class MetricsEndpoint {
 public:
  struct Options {
    // "host:port", "[v6-address]:port" or ":port" (all interfaces). Port 0
    // picks a free one (see port()).
    std::string listen;
    // Threads answering scrapes; scrapes are rare and cheap.
    int threads = 2;
    // Stack of each thread: large enough for any static TLS (see above).
    size_t thread_stack_bytes = size_t{8} << 20;
    // Idle or slow connections cannot fill the endpoint: each is dropped
    // after connection_timeout_s without progress, one address may hold at
    // most per_ip_connection_limit, all together connection_limit (the
    // library's default, FD_SETSIZE - 4 = 1020, is what a thousand idle
    // sockets exhausted in issue 13).
    unsigned int connection_timeout_s = 10;
    unsigned int per_ip_connection_limit = 32;
    unsigned int connection_limit = 4096;
  };

  // Starts listening. INVALID_ARGUMENT for an unparsable address,
  // UNAVAILABLE with libmicrohttpd's reason when it cannot listen.
  // Collectables that have expired are skipped at scrape time.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const Options& options,
      std::vector<std::weak_ptr<prometheus::Collectable>> collectables);

  ~MetricsEndpoint();  // stops listening; waits for scrapes in progress
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

  // The text a scrape returns (exposed for tests and tools).
  std::string Render() const;

 private:
  explicit MetricsEndpoint(
      std::vector<std::weak_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}

  static void OnLibraryMessage(void* cls, const char* format, va_list args);

  const std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  absl::Mutex log_mu_;
  bool starting_ ABSL_GUARDED_BY(log_mu_) = true;
  std::vector<std::string> start_log_ ABSL_GUARDED_BY(log_mu_);
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_METRICS_ENDPOINT_H_
