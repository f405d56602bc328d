#include "server/slow_request_reaper.h"

#include <sys/socket.h>

#include <algorithm>

#include "absl/time/clock.h"

namespace diarization::server {

SlowRequestReaper::SlowRequestReaper(absl::Duration limit)
    : limit_(limit), thread_([this] { Loop(); }) {}

SlowRequestReaper::~SlowRequestReaper() {
  stop_.Notify();
  thread_.join();
}

void SlowRequestReaper::Opened(const void* key, int fd) {
  absl::MutexLock lock(&mu_);
  connections_[key] = {.fd = fd, .waiting_since = absl::Now()};
}

void SlowRequestReaper::RequestStarted(const void* key) {
  absl::MutexLock lock(&mu_);
  auto it = connections_.find(key);
  if (it != connections_.end()) it->second.in_request = true;
}

void SlowRequestReaper::RequestDone(const void* key) {
  absl::MutexLock lock(&mu_);
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  it->second.in_request = false;
  it->second.waiting_since = absl::Now();
}

void SlowRequestReaper::Closed(const void* key) {
  absl::MutexLock lock(&mu_);
  connections_.erase(key);
}

void SlowRequestReaper::Loop() {
  // A quarter of the limit between looks (at most 1 s, at least 50 ms).
  const absl::Duration tick =
      std::clamp(limit_ / 4, absl::Milliseconds(50), absl::Seconds(1));
  while (!stop_.WaitForNotificationWithTimeout(tick)) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    for (auto& [key, c] : connections_) {
      if (c.in_request || c.reaped || now - c.waiting_since < limit_) continue;
      // Under mu_: Closed (before the descriptor is closed) waits for it.
      shutdown(c.fd, SHUT_RDWR);
      c.reaped = true;
      ++reaped_;
    }
  }
}

}  // namespace diarization::server
