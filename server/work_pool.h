// A small fixed pool of threads for the server's own work (decoding and
// resampling request audio), so that gRPC callbacks never compute: a
// reactor posts the work here and returns at once. Tasks run in FIFO order.
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

class WorkPool {
 public:
  static absl::StatusOr<std::unique_ptr<WorkPool>> Create(int threads);

  // Runs every task already posted, then joins the threads.
  ~WorkPool();

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Never blocks. The server destroys the pool only after the gRPC server
  // has shut down, so no task is posted during destruction.
  void Post(std::function<void()> task);

  // Tasks waiting (not running), for tests and GetInfo.
  int queued() const;

 private:
  explicit WorkPool(int threads);
  void Loop();

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_WORK_POOL_H_
