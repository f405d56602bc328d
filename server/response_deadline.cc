#include "server/response_deadline.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace diarization::server {

ResponseDeadline::ResponseDeadline(ServiceState& state,
                                   grpc::CallbackServerContext* context,
                                   std::function<void()> hold,
                                   std::function<void()> release,
                                   std::function<void()> on_expired)
    : state_(state),
      context_(context),
      hold_(std::move(hold)),
      release_(std::move(release)),
      on_expired_(std::move(on_expired)) {}

void ResponseDeadline::WriteStarted(absl::Time call_end) {
  CallTimer* timer = state_.timer();
  if (timer == nullptr) return;
  Disarm();
  const absl::Time now = absl::Now();
  const absl::Time when = std::max(
      now + absl::Seconds(1),
      std::min(now + absl::Seconds(state_.limits().write_timeout_s), call_end));
  const uint64_t generation = ++generation_;
  hold_();
  // The callback may run before Schedule returns: it hands its reference
  // to the pool task, and a later Cancel of its id returns false.
  const CallTimer::Id id = timer->Schedule(when, [this, generation] {
    state_.pool()->Post([this, generation] {
      Expire(generation);
      release_();
    });
  });
  timer_ = id;
}

void ResponseDeadline::WriteDone() {
  ++generation_;
  Disarm();
}

void ResponseDeadline::Disarm() {
  const CallTimer::Id id = timer_.exchange(0);
  if (id != 0 && state_.timer() != nullptr && state_.timer()->Cancel(id)) {
    release_();
  }
}

void ResponseDeadline::Expire(uint64_t generation) {
  if (generation != generation_.load()) return;  // that write completed
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    cancelling_ = std::this_thread::get_id();
  }
  expired_ = true;
  on_expired_();
  // Completes the stuck write (with ok = false) and ends the call.
  context_->TryCancel();
  absl::MutexLock lock(&mu_);
  cancelling_ = std::thread::id();
}

void ResponseDeadline::CallDone() {
  ++generation_;
  Disarm();
  absl::MutexLock lock(&mu_);
  done_ = true;
  // A cancel on another thread still uses the context: wait for it. (On
  // this thread it is the caller: gRPC ran OnDone inside TryCancel.)
  struct NoOtherCancel {
    const std::thread::id* cancelling;
    std::thread::id self;
    static bool Check(NoOtherCancel* c) {
      return *c->cancelling == std::thread::id() || *c->cancelling == c->self;
    }
  } wait{&cancelling_, std::this_thread::get_id()};
  mu_.Await(absl::Condition(&NoOtherCancel::Check, &wait));
}

}  // namespace diarization::server
