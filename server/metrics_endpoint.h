// The Prometheus scrape endpoint: GET /metrics in the text exposition format,
// served by libmicrohttpd from prometheus-cpp collectables; and GET /healthz,
// the serving state for HTTP probes (a Kubernetes gRPC probe cannot speak
// TLS, so a TLS server is probed here).
//
// Security (docs/operations.md, "Security"): with `tokens`, /metrics needs
// "Authorization: Bearer <token>" of a token whose methods list "metrics"
// (401 without a valid one, 403 when not listed); /healthz stays open. With
// `tls_cert`/`tls_key`, both are served over HTTPS (libmicrohttpd on GnuTLS);
// the files are re-read every `tls_refresh_s` and a change moves the
// listening socket to a new daemon with the new certificate (connections
// wait in the socket's backlog meanwhile; a scrape in flight on the old
// daemon at that moment may be cut, the next one succeeds).
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
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "prometheus/collectable.h"
#include "server/auth/token_store.h"
#include "server/slow_request_reaper.h"

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
    // Issue 39 (slowloris: a request trickled a byte at a time is never
    // idle): a connection must also deliver a whole request header within
    // request_timeout_s of opening or of its previous response
    // (slow_request_reaper.h), and the limits are sized so that the
    // endpoint's descriptors stay well under the process's (a scrape or
    // probe needs one connection per client).
    unsigned int connection_timeout_s = 10;
    double request_timeout_s = 5.0;
    unsigned int per_ip_connection_limit = 8;
    unsigned int connection_limit = 256;
    // Bearer-token auth for /metrics; null: open.
    std::shared_ptr<const auth::TokenStore> tokens;
    // HTTPS with these PEM files; empty: HTTP.
    std::string tls_cert;
    std::string tls_key;
    int tls_refresh_s = 60;
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

  // GET /healthz answers 200 "SERVING" while `serving` returns true, else
  // 503 "NOT_SERVING" (404 until set). Thread-safe.
  void SetHealthCheck(std::function<bool()> serving);

  // The text a scrape returns (exposed for tests and tools).
  std::string Render() const;

 private:
  explicit MetricsEndpoint(
      std::vector<std::weak_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}

  static void OnLibraryMessage(void* cls, const char* format, va_list args);

  // Starts a daemon on `listen_fd` (or on `addr` when -1) with the current
  // certificate, if any.
  MHD_Daemon* StartDaemon(const void* addr, int listen_fd, bool ipv6);
  // Re-reads the certificate files; on a change, moves the socket to a new
  // daemon.
  void WatchCertificates();
  friend struct MetricsRequestHandler;
  // The health check's answer; *known false until SetHealthCheck.
  bool Serving(bool* known) const;

  const std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  Options options_;
  bool ipv6_ = false;
  // The PEM text the current daemon serves (libmicrohttpd keeps pointers).
  std::string cert_pem_, key_pem_;
  absl::Notification stop_;
  std::thread watcher_;
  mutable absl::Mutex health_mu_;
  std::function<bool()> serving_ ABSL_GUARDED_BY(health_mu_);
  absl::Mutex log_mu_;
  bool starting_ ABSL_GUARDED_BY(log_mu_) = true;
  std::vector<std::string> start_log_ ABSL_GUARDED_BY(log_mu_);
  // Before daemon_: the daemon (stopped first) reports into it.
  std::unique_ptr<SlowRequestReaper> reaper_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_METRICS_ENDPOINT_H_
