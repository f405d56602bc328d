#include "server/work_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace diarization::server {

absl::StatusOr<std::unique_ptr<WorkPool>> WorkPool::Create(int threads) {
  return Create(WorkPoolOptions{.threads = threads});
}

absl::StatusOr<std::unique_ptr<WorkPool>> WorkPool::Create(
    const WorkPoolOptions& options) {
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "work pool threads is ", options.threads, "; use 1 to 1024"));
  }
  if (options.max_queued < 0 || options.nice < 0 || options.nice > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("work pool max_queued ", options.max_queued, " or nice ",
                     options.nice, " out of range (>= 0, 0..19)"));
  }
  return std::unique_ptr<WorkPool>(new WorkPool(options));
}

WorkPool::WorkPool(const WorkPoolOptions& options) : options_(options) {
  threads_.reserve(options.threads);
  for (int i = 0; i < options.threads; ++i) {
    threads_.emplace_back([this] {
      if (options_.nice > 0) {
        // Per thread on Linux (the nice value belongs to the task). Best
        // effort: a failure only loses the priority hint.
        const id_t tid = static_cast<id_t>(::syscall(SYS_gettid));
        ::setpriority(PRIO_PROCESS, tid,
                      ::getpriority(PRIO_PROCESS, tid) + options_.nice);
      }
      Loop();
    });
  }
}

WorkPool::~WorkPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void WorkPool::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

bool WorkPool::TryPost(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (options_.max_queued > 0 &&
      static_cast<int>(tasks_.size()) >= options_.max_queued) {
    return false;
  }
  tasks_.push_back(std::move(task));
  return true;
}

int WorkPool::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(tasks_.size());
}

void WorkPool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->tasks_.empty();
          },
          this));
      if (tasks_.empty()) return;  // stopping and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace diarization::server
