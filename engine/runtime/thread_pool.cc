#include "engine/runtime/thread_pool.h"

#include <utility>

namespace diarization::runtime {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 1) num_threads = 1;
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

ThreadPool::~ThreadPool() { Shutdown(); }

void ThreadPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
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
      task = std::move(tasks_.front());
      tasks_.pop_front();
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
    pool_->Schedule([state = state_] { Drain(state); });
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
