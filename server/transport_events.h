// Process-wide counters of what the transport defences did (issue 39), and
// the rate limit of the log lines an attacker can trigger. Exposed on
// /metrics as
//   diarization_transport_events_total{event="..."}
//     unread_response:   a call ended because its response waited unread
//                        past write_timeout_s (response_deadline.h)
//     connection_refused_global / connection_refused_peer: a connection
//                        closed at accept by the connection caps
//                        (accept_guard.h)
//     accept_fd_exhausted: accept failed for want of a descriptor (the
//                        queued connection was refused, the listener kept)
//     reset_flood_closed: a connection closed for cancelling calls faster
//                        than --max_resets_per_s (reset_flood_guard.h)
//   diarization_log_lines_suppressed_total{kind="..."}: per-call log lines
//     not written by the rate limit (kind: the status code, or the event).
// Counters are atomics: the accept path bumps them without a lock.
#ifndef DIARIZATION_SERVER_TRANSPORT_EVENTS_H_
#define DIARIZATION_SERVER_TRANSPORT_EVENTS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diarization::server {

enum class TransportEvent {
  kUnreadResponse,
  kConnectionRefusedGlobal,
  kConnectionRefusedPeer,
  kAcceptFdExhausted,
  kResetFloodClosed,
  kCount,
};

void CountTransportEvent(TransportEvent event);
uint64_t TransportEventCount(TransportEvent event);

// The per-call log lines' rate limit: at most `burst` lines of one kind at
// once, refilled at `per_second`. Allow() says whether to write this line;
// a refused one is counted. TakeSuppressed() returns (and zeroes) how many
// of that kind were refused since the last line written, so the next line
// can say so ("suppressed_before").
class LogRateLimit {
 public:
  // Kinds: gRPC status codes 0-16, then events.
  static constexpr int kKinds = 24;
  static constexpr int kEventKind = 17;
  static LogRateLimit& Get();
  // Defaults 20 lines per second, bursts of 200 (--log_lines_per_s).
  void Configure(double per_second, double burst);
  bool Allow(int kind);
  uint64_t TakeSuppressed(int kind);
  uint64_t suppressed_total(int kind) const;

 private:
  LogRateLimit() = default;
  struct Bucket {
    std::atomic<int64_t> refill_ns{0};
    std::atomic<double> tokens{-1};
    std::atomic<uint64_t> suppressed{0};
    std::atomic<uint64_t> suppressed_total{0};
  };
  std::atomic<double> per_second_{20};
  std::atomic<double> burst_{200};
  Bucket buckets_[kKinds];
};

// The two families above, for the metrics endpoint.
class TransportMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_TRANSPORT_EVENTS_H_
