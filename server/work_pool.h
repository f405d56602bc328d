// A small fixed pool of threads for the server's own work, so that gRPC
// callbacks never compute: a reactor posts the work here and returns at once.
// Tasks run in FIFO order. The server runs two (grpc_server.h): one for
// stream messages (short tasks: validate, resample one chunk, append), one
// for whole-file decoding (long tasks, bounded queue, lower CPU priority), so
// that a stream's next read never waits behind an upload's decode.
#ifndef DIARIZATION_SERVER_WORK_POOL_H_
#define DIARIZATION_SERVER_WORK_POOL_H_

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace diarization::server {

struct WorkPoolOptions {
  int threads = 2;
  // TryPost refuses a task while this many wait (not running); 0 = no bound
  // (Post never refuses).
  int max_queued = 0;
  // Added to the threads' nice value (setpriority on each thread, Linux):
  // > 0 makes the pool yield the CPU to the stream and engine threads.
  int nice = 0;
};

class WorkPool {
 public:
  static absl::StatusOr<std::unique_ptr<WorkPool>> Create(int threads);
  static absl::StatusOr<std::unique_ptr<WorkPool>> Create(
      const WorkPoolOptions& options);

  // Runs every task already posted, then joins the threads.
  ~WorkPool();

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Never blocks. The server destroys the pool only after the gRPC server
  // has shut down, so no task is posted during destruction.
  void Post(std::function<void()> task);

  // Post unless max_queued tasks already wait; false (and the task is
  // dropped) then.
  bool TryPost(std::function<void()> task);

  // Tasks waiting (not running), for tests and GetInfo.
  int queued() const;

 private:
  explicit WorkPool(const WorkPoolOptions& options);
  void Loop();

  const WorkPoolOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_WORK_POOL_H_
