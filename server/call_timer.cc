#include "server/call_timer.h"

#include "absl/time/clock.h"

namespace diarization::server {

CallTimer::CallTimer() : thread_([this] { Loop(); }) {}

CallTimer::~CallTimer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

CallTimer::Id CallTimer::Schedule(absl::Time when,
                                  std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  timers_.emplace(std::make_pair(when, id), std::move(callback));
  when_.emplace(id, when);
  return id;
}

bool CallTimer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  when_.erase(it);
  return true;
}

int CallTimer::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(timers_.size());
}

void CallTimer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      mu_.Await(absl::Condition(
          +[](CallTimer* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
            return t->stopping_ || !t->timers_.empty();
          },
          this));
      continue;
    }
    const absl::Time next = timers_.begin()->first.first;
    if (absl::Now() < next) {
      // Wakes early when a sooner timer is added or we stop (the
      // condition), else at `next`.
      const auto first = timers_.begin()->first;
      struct Args {
        CallTimer* timer;
        std::pair<absl::Time, Id> first;
      } args{this, first};
      mu_.AwaitWithDeadline(
          absl::Condition(
              +[](Args* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->timer->mu_) {
                return a->timer->stopping_ || a->timer->timers_.empty() ||
                       a->timer->timers_.begin()->first != a->first;
              },
              &args),
          next);
      continue;
    }
    auto it = timers_.begin();
    std::function<void()> callback = std::move(it->second);
    when_.erase(it->first.second);
    timers_.erase(it);
    mu_.Unlock();
    callback();
    mu_.Lock();
  }
}

}  // namespace diarization::server
