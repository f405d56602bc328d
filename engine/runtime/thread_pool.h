// A fixed set of host threads running posted tasks in FIFO order, and a
// Strand that runs one owner's tasks one at a time, in order, on a pool.
//
// The engine runs host clustering and every user callback here, so device
// workers never wait on host work (DESIGN.md "Data flow", step 5).
#ifndef DIARIZATION_ENGINE_RUNTIME_THREAD_POOL_H_
#define DIARIZATION_ENGINE_RUNTIME_THREAD_POOL_H_

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace diarization::runtime {

// Thread-safe.
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  // Shutdown().
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `task` on a pool thread. After Shutdown() began, tasks are still
  // accepted and run before the threads exit (a task may post follow-ups).
  void Schedule(std::function<void()> task);

  // Runs every queued task (including ones they post), then joins the
  // threads. Idempotent. Must not be called from a pool thread.
  void Shutdown();

 private:
  void Loop();

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  absl::Mutex join_mu_;
};

// Serializes tasks on a ThreadPool: tasks posted to one Strand run one at a
// time, in posting order, never two at once. Thread-safe.
class Strand {
 public:
  explicit Strand(ThreadPool* pool) : pool_(pool) {}
  void Post(std::function<void()> task);

 private:
  struct State {
    absl::Mutex mu;
    std::deque<std::function<void()>> tasks ABSL_GUARDED_BY(mu);
    bool running ABSL_GUARDED_BY(mu) = false;
  };
  static void Drain(std::shared_ptr<State> state);

  ThreadPool* pool_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_THREAD_POOL_H_
