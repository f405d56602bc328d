#include "server/metrics_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "server/auth/server_credentials.h"
#include "server/auth/token_auth.h"
#include "server/request_log.h"

namespace diarization::server {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Splits "host:port", "[v6]:port" or ":port".
absl::Status SplitHostPort(const std::string& listen, std::string* host,
                           std::string* port) {
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen=", listen, ": ", why,
                     " (expected host:port, [v6-address]:port or :port)"));
  };
  size_t colon;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() ||
        listen[close + 1] != ':') {
      return bad("unterminated [address]");
    }
    *host = listen.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    *host = listen.substr(0, colon);
  }
  *port = listen.substr(colon + 1);
  int number = -1;
  if (!absl::SimpleAtoi(*port, &number) || number < 0 || number > 65535) {
    return bad("the port is not a number in 0..65535");
  }
  return absl::OkStatus();
}

MHD_Result Reply(MHD_Connection* connection, unsigned int code,
                 const std::string& body, const char* content_type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  const MHD_Result result = MHD_queue_response(connection, code, response);
  MHD_destroy_response(response);
  return result;
}

std::optional<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MHD_Result Refuse(MHD_Connection* connection, unsigned int code,
                  const std::string& body) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
  if (code == MHD_HTTP_UNAUTHORIZED) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Bearer realm=\"metrics\"");
  }
  const MHD_Result result = MHD_queue_response(connection, code, response);
  MHD_destroy_response(response);
  return result;
}

}  // namespace

void MetricsEndpoint::SetHealthCheck(std::function<bool()> serving) {
  absl::MutexLock lock(&health_mu_);
  serving_ = std::move(serving);
}

bool MetricsEndpoint::Serving(bool* known) const {
  absl::MutexLock lock(&health_mu_);
  *known = serving_ != nullptr;
  return *known && serving_();
}

// libmicrohttpd's messages: kept while Start() runs (they become the error
// status), then sent to the server's JSON log.
void MetricsEndpoint::OnLibraryMessage(void* cls, const char* format,
                                       va_list args) {
  char buffer[512];
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  std::string line = buffer;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.pop_back();
  }
  auto* self = static_cast<MetricsEndpoint*>(cls);
  {
    absl::MutexLock lock(&self->log_mu_);
    if (self->starting_) {
      if (self->start_log_.size() < 8) self->start_log_.push_back(line);
      return;
    }
  }
  LogEvent("metrics_http_error", line);
}

std::string MetricsEndpoint::Render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : collectables_) {
    if (const auto collectable = weak.lock()) {
      std::vector<prometheus::MetricFamily> more = collectable->Collect();
      families.insert(families.end(), std::make_move_iterator(more.begin()),
                      std::make_move_iterator(more.end()));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

// The request handler; `cls` is the endpoint. Only GET/HEAD.
struct MetricsRequestHandler {
  static MHD_Result Handle(void* cls, MHD_Connection* connection,
                           const char* url, const char* method,
                           const char* /*version*/, const char* /*upload_data*/,
                           size_t* upload_data_size, void** request_state) {
    // libmicrohttpd calls once with the headers, then with the body; answer
    // on the second call so that a request body is drained first.
    static int headers_seen;
    if (*request_state == nullptr) {
      *request_state = &headers_seen;
      auto* self = static_cast<MetricsEndpoint*>(cls);
      if (self->reaper_ != nullptr) self->reaper_->RequestStarted(connection);
      return MHD_YES;
    }
    if (*upload_data_size != 0) {
      *upload_data_size = 0;  // ignore any body
      return MHD_YES;
    }
    const bool get = std::strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
                     std::strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!get) {
      return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                   "only GET /metrics\n", "text/plain");
    }
    const auto* self = static_cast<const MetricsEndpoint*>(cls);
    if (std::strcmp(url, "/healthz") == 0) {
      // Open: probes carry no token.
      bool known = false;
      const bool serving = self->Serving(&known);
      if (!known) {
        return Reply(connection, MHD_HTTP_NOT_FOUND, "no health yet\n",
                     "text/plain");
      }
      return Reply(connection,
                   serving ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                   serving ? "SERVING\n" : "NOT_SERVING\n", "text/plain");
    }
    if (std::strcmp(url, "/metrics") != 0) {
      return Reply(connection, MHD_HTTP_NOT_FOUND,
                   "not found: the metrics are at /metrics\n", "text/plain");
    }
    if (self->options_.tokens != nullptr) {
      const char* header = MHD_lookup_connection_value(
          connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
      std::optional<std::string_view> authorization;
      if (header != nullptr) authorization = header;
      const absl::Status allowed =
          auth::Authorize(*self->options_.tokens, auth::Method::kMetrics,
                          authorization)
              .status();
      if (!allowed.ok()) {
        return Refuse(connection,
                      allowed.code() == absl::StatusCode::kPermissionDenied
                          ? MHD_HTTP_FORBIDDEN
                          : MHD_HTTP_UNAUTHORIZED,
                      absl::StrCat(allowed.message(), "\n"));
      }
    }
    return Reply(connection, MHD_HTTP_OK, self->Render(), kContentType);
  }
  // libmicrohttpd's connection and request-completed notifications, for
  // the endpoint's SlowRequestReaper.
  static void OnConnection(void* cls, MHD_Connection* connection,
                           void** /*socket_context*/,
                           MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<MetricsEndpoint*>(cls);
    if (self->reaper_ == nullptr) return;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* info = MHD_get_connection_info(
          connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      if (info != nullptr) self->reaper_->Opened(connection, info->connect_fd);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      self->reaper_->Closed(connection);
    }
  }
  static void OnRequestCompleted(void* cls, MHD_Connection* connection,
                                 void** /*request_state*/,
                                 MHD_RequestTerminationCode /*code*/) {
    auto* self = static_cast<MetricsEndpoint*>(cls);
    if (self->reaper_ != nullptr) self->reaper_->RequestDone(connection);
  }
};

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const Options& options,
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError("the metrics endpoint needs >= 1 thread");
  }
  std::string host, port;
  if (absl::Status s = SplitHostPort(options.listen, &host, &port); !s.ok()) {
    return s;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                 port.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen=", options.listen, ": cannot resolve '",
                     host, "': ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found,
                                                           &freeaddrinfo);

  auto endpoint = std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(std::move(collectables)));
  endpoint->options_ = options;
  endpoint->ipv6_ = found->ai_family == AF_INET6;
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  if (tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return absl::UnavailableError(
          "this libmicrohttpd was built without TLS; serve /metrics over "
          "HTTP inside the cluster (docs/operations.md, Security)");
    }
    if (absl::Status s =
            auth::CheckTlsFiles({.cert = options.tls_cert,
                                 .key = options.tls_key,
                                 .refresh_s = options.tls_refresh_s});
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics endpoint: ", s.message()));
    }
    endpoint->cert_pem_ = ReadWhole(options.tls_cert).value_or("");
    endpoint->key_pem_ = ReadWhole(options.tls_key).value_or("");
  }
  if (options.request_timeout_s > 0) {
    endpoint->reaper_ = std::make_unique<SlowRequestReaper>(
        absl::Seconds(options.request_timeout_s));
  }
  endpoint->daemon_ =
      endpoint->StartDaemon(found->ai_addr, /*listen_fd=*/-1, endpoint->ipv6_);
  std::vector<std::string> start_log;
  {
    absl::MutexLock lock(&endpoint->log_mu_);
    endpoint->starting_ = false;
    start_log.swap(endpoint->start_log_);
  }
  if (endpoint->daemon_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on --metrics_listen=", options.listen, ": ",
        start_log.empty() ? "libmicrohttpd could not start"
                          : absl::StrJoin(start_log, "; "),
        " (pass --metrics_listen= to run without the metrics endpoint)"));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(endpoint->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  endpoint->port_ = info == nullptr ? 0 : info->port;
  if (tls) {
    MetricsEndpoint* self = endpoint.get();
    endpoint->watcher_ = std::thread([self] { self->WatchCertificates(); });
  }
  return endpoint;
}

MHD_Daemon* MetricsEndpoint::StartDaemon(const void* addr, int listen_fd,
                                         bool ipv6) {
  // MHD_USE_AUTO: epoll on Linux. The default, select(), cannot watch a
  // descriptor >= FD_SETSIZE (1024), which a busy server's scrape
  // connection can be. MHD_USE_ITC: needed to hand the socket over
  // (MHD_quiesce_daemon) when the certificate changes.
  unsigned int flags =
      MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (ipv6) flags |= MHD_USE_IPv6;
  std::vector<MHD_OptionItem> extra;
  if (listen_fd >= 0) {
    extra.push_back({MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr});
  } else {
    extra.push_back({MHD_OPTION_SOCK_ADDR, 0, const_cast<void*>(addr)});
  }
  if (!cert_pem_.empty()) {
    flags |= MHD_USE_TLS;
    extra.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, key_pem_.data()});
    extra.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, cert_pem_.data()});
  }
  extra.push_back({MHD_OPTION_END, 0, nullptr});
  return MHD_start_daemon(
      flags, /*port=*/0, /*apc=*/nullptr, nullptr,
      &MetricsRequestHandler::Handle, this, MHD_OPTION_ARRAY, extra.data(),
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned int>(options_.threads),
      MHD_OPTION_THREAD_STACK_SIZE, options_.thread_stack_bytes,
      MHD_OPTION_CONNECTION_TIMEOUT, options_.connection_timeout_s,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, options_.per_ip_connection_limit,
      MHD_OPTION_CONNECTION_LIMIT, options_.connection_limit,
      MHD_OPTION_EXTERNAL_LOGGER, &MetricsEndpoint::OnLibraryMessage, this,
      MHD_OPTION_NOTIFY_CONNECTION, &MetricsRequestHandler::OnConnection, this,
      MHD_OPTION_NOTIFY_COMPLETED, &MetricsRequestHandler::OnRequestCompleted,
      this, MHD_OPTION_END);
}

void MetricsEndpoint::WatchCertificates() {
  while (!stop_.WaitForNotificationWithTimeout(
      absl::Seconds(options_.tls_refresh_s))) {
    std::optional<std::string> cert = ReadWhole(options_.tls_cert);
    std::optional<std::string> key = ReadWhole(options_.tls_key);
    if (!cert.has_value() || !key.has_value() ||
        (*cert == cert_pem_ && *key == key_pem_)) {
      continue;
    }
    // A pair caught mid-update does not match: wait for the next look.
    if (!auth::CheckTlsFiles({.cert = options_.tls_cert,
                              .key = options_.tls_key,
                              .refresh_s = options_.tls_refresh_s})
             .ok()) {
      continue;
    }
    const int fd = MHD_quiesce_daemon(daemon_);
    if (fd < 0) {
      LogEvent("metrics_tls_reload_failed",
               "could not take the listening socket from libmicrohttpd");
      continue;
    }
    MHD_Daemon* old = daemon_;
    std::string old_cert = std::move(cert_pem_), old_key = std::move(key_pem_);
    cert_pem_ = *std::move(cert);
    key_pem_ = *std::move(key);
    MHD_Daemon* next = StartDaemon(nullptr, fd, ipv6_);
    if (next == nullptr) {
      // Keep serving with the previous certificate.
      cert_pem_ = std::move(old_cert);
      key_pem_ = std::move(old_key);
      next = StartDaemon(nullptr, fd, ipv6_);
      LogEvent("metrics_tls_reload_failed",
               "libmicrohttpd refused the new certificate; the old one stays");
    } else {
      LogEvent("metrics_tls_reloaded", options_.tls_cert);
    }
    daemon_ = next;
    // The old daemon's threads may still be in a handshake with the old PEM
    // text, which it keeps pointers to: stop it before freeing that text.
    MHD_stop_daemon(old);
    if (daemon_ == nullptr) {
      LogEvent("metrics_http_error",
               "the metrics endpoint stopped: no daemon could take the socket");
      return;
    }
  }
}

MetricsEndpoint::~MetricsEndpoint() {
  stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace diarization::server
