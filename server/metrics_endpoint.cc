#include "server/metrics_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
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

}  // namespace

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
  // The request handler; `cls` is the endpoint. Only GET/HEAD /metrics.
  MHD_AccessHandlerCallback handler =
      [](void* cls, MHD_Connection* connection, const char* url,
         const char* method, const char* /*version*/,
         const char* /*upload_data*/, size_t* upload_data_size,
         void** request_state) -> MHD_Result {
    // libmicrohttpd calls once with the headers, then with the body; answer
    // on the second call so that a request body is drained first.
    static int headers_seen;
    if (*request_state == nullptr) {
      *request_state = &headers_seen;
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
    if (std::strcmp(url, "/metrics") != 0) {
      return Reply(connection, MHD_HTTP_NOT_FOUND,
                   "not found: the metrics are at /metrics\n", "text/plain");
    }
    const auto* self = static_cast<const MetricsEndpoint*>(cls);
    return Reply(connection, MHD_HTTP_OK, self->Render(), kContentType);
  };

  // MHD_USE_AUTO: epoll on Linux. The default, select(), cannot watch a
  // descriptor >= FD_SETSIZE (1024), which a busy server's scrape
  // connection can be.
  unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  if (found->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  endpoint->daemon_ = MHD_start_daemon(
      flags, /*port=*/0, /*apc=*/nullptr, nullptr, handler, endpoint.get(),
      MHD_OPTION_SOCK_ADDR, found->ai_addr, MHD_OPTION_THREAD_POOL_SIZE,
      static_cast<unsigned int>(options.threads), MHD_OPTION_THREAD_STACK_SIZE,
      options.thread_stack_bytes, MHD_OPTION_CONNECTION_TIMEOUT,
      options.connection_timeout_s, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      options.per_ip_connection_limit, MHD_OPTION_CONNECTION_LIMIT,
      options.connection_limit, MHD_OPTION_EXTERNAL_LOGGER,
      &MetricsEndpoint::OnLibraryMessage, endpoint.get(), MHD_OPTION_END);
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
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace diarization::server
