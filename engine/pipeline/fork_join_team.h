// A fixed team of threads for many short parallel loops in a row: the
// centroid linkage's update pass, run once per merge (thousands of times,
// tens of microseconds each), where handing each pass to a thread pool
// would cost more than the pass itself.
//
// Contract: Run splits [0, count) into size() contiguous parts, in order,
// runs part 0 on the caller and the others on the team, and returns when
// all are done; everything the parts wrote is then visible to the caller.
// Between passes the workers spin briefly (the next pass usually follows
// within microseconds) and then sleep on a futex (C++20 atomic wait), so an
// idle or oversubscribed team does not burn cores. One caller at a time;
// `fn` must not throw. The destructor stops and joins the workers.
#ifndef DIARIZATION_ENGINE_PIPELINE_FORK_JOIN_TEAM_H_
#define DIARIZATION_ENGINE_PIPELINE_FORK_JOIN_TEAM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace diarization::pipeline {

class ForkJoinTeam {
 public:
  // `threads` >= 1 parts per pass (threads - 1 workers).
  explicit ForkJoinTeam(int threads);
  ~ForkJoinTeam();
  ForkJoinTeam(const ForkJoinTeam&) = delete;
  ForkJoinTeam& operator=(const ForkJoinTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // fn(part, lo, hi) for the parts [lo, hi) of [0, count).
  void Run(size_t count, const std::function<void(int, size_t, size_t)>& fn);

 private:
  void Work(int part);
  std::pair<size_t, size_t> Part(int part) const;

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // Set before each epoch_ increment (release), read after it (acquire).
  const std::function<void(int, size_t, size_t)>* fn_ = nullptr;
  size_t count_ = 0;
};

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_FORK_JOIN_TEAM_H_
