// The one pool of host threads in the project, and a Strand that runs one
// owner's tasks one at a time, in order, on a pool.
//
// Users: the engine runs every user callback (Strand per job) and the host
// clustering (host_tasks.h, ordered by priority) here, so device workers
// never wait on host work (DESIGN.md "Data flow", step 5); the server runs
// two (server/grpc_server.h): one for stream messages (short tasks) and one
// for whole-file decoding (bounded queue, lower CPU priority), so that gRPC
// callbacks never compute and a stream's next read never waits behind an
// upload's decode.
//
// Order: the task of the smallest Priority first; equal priorities (every
// plain Post) in posting order, i.e. FIFO.
#ifndef DIARIZATION_ENGINE_RUNTIME_THREAD_POOL_H_
#define DIARIZATION_ENGINE_RUNTIME_THREAD_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace diarization::runtime {

struct ThreadPoolOptions {
  int threads = 2;
  // TryPost refuses a task while this many wait (not running); 0 = no bound
  // (Post never refuses).
  int max_queued = 0;
  // Added to the threads' nice value (setpriority on each thread, Linux):
  // > 0 makes the pool yield the CPU to the stream and engine threads.
  int nice = 0;
};

// Thread-safe.
class ThreadPool {
 public:
  // (rank, size): smaller runs first (host_tasks.h: kind, then windows).
  using Priority = std::pair<int, int64_t>;

  // Checks the options (threads 1..1024, max_queued >= 0, nice 0..19): for
  // pools sized from flags.
  static absl::StatusOr<std::unique_ptr<ThreadPool>> Create(
      const ThreadPoolOptions& options);
  // `num_threads` (at least 1) threads, no bound, no nice: for callers whose
  // options were checked already (Engine::Create).
  explicit ThreadPool(int num_threads);
  // Shutdown().
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `task` on a pool thread; never blocks. After Shutdown() began,
  // tasks are still accepted and run before the threads exit (a task may
  // post follow-ups).
  void Post(std::function<void()> task) {
    Post(Priority{0, 0}, std::move(task));
  }
  void Post(Priority priority, std::function<void()> task);

  // Post unless max_queued tasks already wait; false (and the task is
  // dropped) then.
  bool TryPost(std::function<void()> task);

  // Tasks waiting (not running), for tests and GetInfo.
  int queued() const;

  // Runs every queued task (including ones they post), then joins the
  // threads. Idempotent. Must not be called from a pool thread.
  void Shutdown();

 private:
  // (priority, arrival): the smallest runs first.
  using Key = std::tuple<Priority, uint64_t>;

  explicit ThreadPool(const ThreadPoolOptions& options);
  void PostLocked(Priority priority, std::function<void()> task)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();

  const ThreadPoolOptions options_;
  mutable absl::Mutex mu_;
  std::map<Key, std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  uint64_t arrivals_ ABSL_GUARDED_BY(mu_) = 0;
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
