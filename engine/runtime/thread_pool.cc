#include "engine/runtime/thread_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace diarization::runtime {

absl::StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(
    const ThreadPoolOptions& options) {
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "thread pool threads is ", options.threads, "; use 1 to 1024"));
  }
  if (options.max_queued < 0 || options.nice < 0 || options.nice > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("thread pool max_queued ", options.max_queued, " or nice ",
                     options.nice, " out of range (>= 0, 0..19)"));
  }
  return std::unique_ptr<ThreadPool>(new ThreadPool(options));
}

ThreadPool::ThreadPool(int num_threads)
    : ThreadPool(ThreadPoolOptions{.threads = std::max(1, num_threads)}) {}

ThreadPool::ThreadPool(const ThreadPoolOptions& options) : options_(options) {
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

ThreadPool::~ThreadPool() { Shutdown(); }

void ThreadPool::Post(Priority priority, std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  PostLocked(priority, std::move(task));
}

bool ThreadPool::TryPost(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (options_.max_queued > 0 &&
      static_cast<int>(tasks_.size()) >= options_.max_queued) {
    return false;
  }
  PostLocked(Priority{0, 0}, std::move(task));
  return true;
}

void ThreadPool::PostLocked(Priority priority, std::function<void()> task) {
  tasks_.emplace(Key{priority, arrivals_++}, std::move(task));
}

int ThreadPool::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(tasks_.size());
}

void ThreadPool::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      // Exit only when stopping and nothing is queued or running (a running
      // task may still post follow-up work).
      mu_.Await(absl::Condition(
          +[](ThreadPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return !p->tasks_.empty() || (p->stopping_ && p->busy_ == 0);
          },
          this));
      if (tasks_.empty()) return;
      task = std::move(tasks_.begin()->second);
      tasks_.erase(tasks_.begin());
      ++busy_;
    }
    task();
    absl::MutexLock lock(&mu_);
    --busy_;
  }
}

void Strand::Post(std::function<void()> task) {
  bool start = false;
  {
    absl::MutexLock lock(&state_->mu);
    state_->tasks.push_back(std::move(task));
    if (!state_->running) {
      state_->running = true;
      start = true;
    }
  }
  if (start) {
    pool_->Post([state = state_] { Drain(state); });
  }
}

void Strand::Drain(std::shared_ptr<State> state) {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&state->mu);
      if (state->tasks.empty()) {
        state->running = false;
        return;
      }
      task = std::move(state->tasks.front());
      state->tasks.pop_front();
    }
    task();
  }
}

}  // namespace diarization::runtime
