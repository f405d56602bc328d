#include "server/transport_events.h"

#include <algorithm>
#include <chrono>

#include "grpcpp/support/status.h"
#include "server/status_util.h"

namespace diarization::server {
namespace {

std::atomic<uint64_t> g_events[static_cast<int>(TransportEvent::kCount)];

const char* EventName(TransportEvent e) {
  switch (e) {
    case TransportEvent::kUnreadResponse:
      return "unread_response";
    case TransportEvent::kConnectionRefusedGlobal:
      return "connection_refused_global";
    case TransportEvent::kConnectionRefusedPeer:
      return "connection_refused_peer";
    case TransportEvent::kAcceptFdExhausted:
      return "accept_fd_exhausted";
    case TransportEvent::kResetFloodClosed:
      return "reset_flood_closed";
    case TransportEvent::kCount:
      break;
  }
  return "unknown";
}

// gRPC's code names, as the request log writes them (status_util's).
std::string KindName(int kind) {
  if (kind >= 0 && kind <= grpc::StatusCode::UNAUTHENTICATED) {
    return std::string(GrpcCodeName(static_cast<grpc::StatusCode>(kind)));
  }
  return "event";
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void CountTransportEvent(TransportEvent event) {
  g_events[static_cast<int>(event)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t TransportEventCount(TransportEvent event) {
  return g_events[static_cast<int>(event)].load(std::memory_order_relaxed);
}

LogRateLimit& LogRateLimit::Get() {
  static LogRateLimit* const limit = new LogRateLimit();
  return *limit;
}

void LogRateLimit::Configure(double per_second, double burst) {
  per_second_ = per_second;
  burst_ = std::max(1.0, burst);
}

bool LogRateLimit::Allow(int kind) {
  if (kind < 0 || kind >= kKinds) kind = kEventKind;
  Bucket& b = buckets_[kind];
  const double rate = per_second_.load();
  if (rate <= 0) return true;  // no limit
  const double burst = burst_.load();
  const int64_t now = NowNs();
  // Lock-free token bucket; a lost race only refills a little less.
  const int64_t last = b.refill_ns.exchange(now);
  double tokens = b.tokens.load();
  if (tokens < 0) tokens = burst;  // first use
  if (last != 0) tokens = std::min(burst, tokens + (now - last) * 1e-9 * rate);
  const bool allowed = tokens >= 1.0;
  if (allowed) tokens -= 1.0;
  b.tokens = tokens;
  if (!allowed) {
    b.suppressed.fetch_add(1, std::memory_order_relaxed);
    b.suppressed_total.fetch_add(1, std::memory_order_relaxed);
  }
  return allowed;
}

uint64_t LogRateLimit::TakeSuppressed(int kind) {
  if (kind < 0 || kind >= kKinds) kind = kEventKind;
  return buckets_[kind].suppressed.exchange(0);
}

uint64_t LogRateLimit::suppressed_total(int kind) const {
  if (kind < 0 || kind >= kKinds) kind = kEventKind;
  return buckets_[kind].suppressed_total.load();
}

std::vector<prometheus::MetricFamily> TransportMetrics::Collect() const {
  prometheus::MetricFamily events;
  events.name = "diarization_transport_events_total";
  events.help =
      "What the transport defences did: calls ended for an unread response, "
      "connections refused by the connection caps, accepts that found no "
      "free descriptor";
  events.type = prometheus::MetricType::Counter;
  for (int i = 0; i < static_cast<int>(TransportEvent::kCount); ++i) {
    prometheus::ClientMetric m;
    m.label.push_back({"event", EventName(static_cast<TransportEvent>(i))});
    m.counter.value = static_cast<double>(g_events[i].load());
    events.metric.push_back(std::move(m));
  }
  prometheus::MetricFamily suppressed;
  suppressed.name = "diarization_log_lines_suppressed_total";
  suppressed.help =
      "Per-call log lines not written by the log rate limit "
      "(--log_lines_per_s), by status code or event";
  suppressed.type = prometheus::MetricType::Counter;
  const LogRateLimit& limit = LogRateLimit::Get();
  for (int kind = 0; kind <= LogRateLimit::kEventKind; ++kind) {
    prometheus::ClientMetric m;
    m.label.push_back({"kind", KindName(kind)});
    m.counter.value = static_cast<double>(limit.suppressed_total(kind));
    suppressed.metric.push_back(std::move(m));
  }
  return {std::move(events), std::move(suppressed)};
}

}  // namespace diarization::server
