// One thread that runs callbacks at given times: the server's per-call
// timers (a stream's config deadline and its max_stream_duration_s, both
// armed when the call starts, before any job exists to carry a deadline).
//
// Contract: a callback runs at most once, on the timer thread, never inside
// Schedule or Cancel and never under the timer's lock, so it may call
// Schedule or Cancel itself. Callbacks must be quick (they delay the timers
// behind them): set a flag, post work to a pool, call grpc's Finish.
// Cancel(id) returns true when the callback had not started and now never
// will; false when it already ran, is running, or the id is unknown. A
// caller that hands the callback a reference (e.g. a reactor's refcount)
// drops it itself when Cancel returns true; otherwise the callback does.
#ifndef DIARIZATION_SERVER_CALL_TIMER_H_
#define DIARIZATION_SERVER_CALL_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace diarization::server {

class CallTimer {
 public:
  using Id = uint64_t;

  CallTimer();
  // Drops the callbacks still pending (without running them) and joins.
  ~CallTimer();

  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  // Runs `callback` at `when` (at once if it has passed). Never 0.
  Id Schedule(absl::Time when, std::function<void()> callback);
  bool Cancel(Id id);

  // Timers not yet run, for tests.
  int pending() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  // Ordered by (time, id): the first entry is the next to run.
  std::map<std::pair<absl::Time, Id>, std::function<void()>> timers_
      ABSL_GUARDED_BY(mu_);
  std::map<Id, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_CALL_TIMER_H_
