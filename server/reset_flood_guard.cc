#include "server/reset_flood_guard.h"

#include <atomic>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/request_log.h"
#include "server/transport_events.h"

namespace diarization::server {
namespace {

struct Window {
  absl::Time start;
  int count = 0;
  bool closed = false;
};

struct State {
  std::atomic<int> max_per_s{0};
  std::function<bool(const std::string&)> close_connection;
  absl::Mutex mu;
  absl::flat_hash_map<std::string, Window> by_peer ABSL_GUARDED_BY(mu);
  absl::Time last_sweep ABSL_GUARDED_BY(mu) = absl::InfinitePast();
};

State& S() {
  static State* const s = new State();
  return *s;
}

}  // namespace

void SetMaxResetsPerSecond(
    int max_per_s,
    std::function<bool(const std::string& grpc_peer)> close_connection) {
  S().close_connection = std::move(close_connection);
  S().max_per_s = max_per_s;
}

void OnCallCancelled(const std::string& grpc_peer) {
  State& s = S();
  const int max = s.max_per_s.load();
  if (max <= 0) return;
  const absl::Time now = absl::Now();
  bool close = false;
  int count = 0;
  {
    absl::MutexLock lock(&s.mu);
    // Connections quiet for a while are forgotten.
    if (now - s.last_sweep > absl::Seconds(10)) {
      absl::erase_if(s.by_peer, [&](const auto& entry) {
        return now - entry.second.start > absl::Seconds(10);
      });
      s.last_sweep = now;
    }
    Window& w = s.by_peer[grpc_peer];
    if (now - w.start >= absl::Seconds(1)) w = {.start = now};
    count = ++w.count;
    if (count > max && !w.closed) {
      w.closed = true;
      close = true;
    }
  }
  if (!close) return;
  const bool closed =
      s.close_connection != nullptr && s.close_connection(grpc_peer);
  CountTransportEvent(TransportEvent::kResetFloodClosed);
  if (LogRateLimit::Get().Allow(LogRateLimit::kEventKind)) {
    LogEvent("reset_flood",
             absl::StrCat(grpc_peer, " cancelled more than ", max,
                          " calls within a second (--max_resets_per_s): ",
                          closed ? "its connection was closed"
                                 : "its connection was not found to close"));
  }
}

}  // namespace diarization::server
