#include "engine/runtime/deadline_timer.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace diarization::runtime::internal {

DeadlineTimer::DeadlineTimer(
    std::function<void(std::shared_ptr<JobState>)> expired,
    std::function<void()> tick, absl::Duration tick_period)
    : expired_(std::move(expired)),
      tick_(std::move(tick)),
      tick_period_(tick_period) {}

DeadlineTimer::~DeadlineTimer() { Stop(); }

void DeadlineTimer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void DeadlineTimer::Add(absl::Time deadline, std::weak_ptr<JobState> job) {
  absl::MutexLock lock(&mu_);
  deadlines_.emplace(deadline, std::move(job));
  cv_.Signal();
}

void DeadlineTimer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void DeadlineTimer::Loop() {
  absl::Time next_tick = absl::Now();
  while (true) {
    std::vector<std::shared_ptr<JobState>> expired;
    bool tick = false;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return deadlines_.empty()
                   ? next_tick
                   : std::min(next_tick, deadlines_.begin()->first);
      };
      while (!stop_ && absl::Now() < wake()) {
        cv_.WaitWithDeadline(&mu_, wake());
      }
      if (stop_) return;
      const absl::Time now = absl::Now();
      while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        if (auto job = deadlines_.begin()->second.lock()) {
          expired.push_back(std::move(job));
        }
        deadlines_.erase(deadlines_.begin());
      }
      if (now >= next_tick) {
        tick = true;
        next_tick = now + tick_period_;
      }
    }
    for (auto& job : expired) expired_(std::move(job));
    if (tick && tick_) tick_();
  }
}

}  // namespace diarization::runtime::internal
