// Internal: the engine's timer thread. It ends jobs whose deadline passed
// (JobOptions::deadline) and runs a periodic tick (device gauges).
//
// The timer owns its state and calls out one way: `expired` for each job
// whose deadline passed and that still exists, `tick` about every
// `tick_period`; both on the timer thread, with no lock held.
#ifndef DIARIZATION_ENGINE_RUNTIME_DEADLINE_TIMER_H_
#define DIARIZATION_ENGINE_RUNTIME_DEADLINE_TIMER_H_

#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/runtime/job_state.h"

namespace diarization::runtime::internal {

// Thread-safe.
class DeadlineTimer {
 public:
  DeadlineTimer(std::function<void(std::shared_ptr<JobState>)> expired,
                std::function<void()> tick, absl::Duration tick_period);
  // Stop().
  ~DeadlineTimer();

  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  void Start();
  // Calls `expired(job)` at `deadline` unless the job is gone by then.
  void Add(absl::Time deadline, std::weak_ptr<JobState> job);
  // Joins the thread; pending deadlines are dropped. Idempotent.
  void Stop();

 private:
  void Loop();

  const std::function<void(std::shared_ptr<JobState>)> expired_;
  const std::function<void()> tick_;
  const absl::Duration tick_period_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::multimap<absl::Time, std::weak_ptr<JobState>> deadlines_
      ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_DEADLINE_TIMER_H_
