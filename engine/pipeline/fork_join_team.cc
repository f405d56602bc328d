#include "engine/pipeline/fork_join_team.h"

#include <immintrin.h>

namespace diarization::pipeline {
namespace {

// About 50-100 us of pause instructions before a waiter sleeps.
constexpr int kSpins = 2000;

}  // namespace

ForkJoinTeam::ForkJoinTeam(int threads) {
  for (int p = 1; p < threads; ++p)
    workers_.emplace_back([this, p] { Work(p); });
}

ForkJoinTeam::~ForkJoinTeam() {
  stop_.store(true, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::pair<size_t, size_t> ForkJoinTeam::Part(int part) const {
  const size_t parts = static_cast<size_t>(size());
  return {count_ * static_cast<size_t>(part) / parts,
          count_ * static_cast<size_t>(part + 1) / parts};
}

void ForkJoinTeam::Run(size_t count,
                       const std::function<void(int, size_t, size_t)>& fn) {
  if (workers_.empty()) {
    fn(0, 0, count);
    return;
  }
  fn_ = &fn;
  count_ = count;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  const auto [lo, hi] = Part(0);
  fn(0, lo, hi);
  for (int i = 0;; ++i) {
    const int left = pending_.load(std::memory_order_acquire);
    if (left == 0) break;
    if (i < kSpins) {
      _mm_pause();
    } else {
      pending_.wait(left, std::memory_order_acquire);
    }
  }
}

void ForkJoinTeam::Work(int part) {
  uint64_t seen = 0;
  while (true) {
    uint64_t e = 0;
    for (int i = 0;; ++i) {
      e = epoch_.load(std::memory_order_acquire);
      if (e != seen) break;
      if (i < kSpins) {
        _mm_pause();
      } else {
        epoch_.wait(seen, std::memory_order_acquire);
      }
    }
    seen = e;
    if (stop_.load(std::memory_order_relaxed)) return;
    const auto [lo, hi] = Part(part);
    (*fn_)(part, lo, hi);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      pending_.notify_one();
    }
  }
}

}  // namespace diarization::pipeline
