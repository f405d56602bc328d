#include "engine/pipeline/fork_join_team.h"

#include <atomic>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

// Every index of every pass is visited exactly once, in contiguous parts in
// ascending order, and the parts' writes are visible after Run: many short
// passes of fresh random lengths (0 included), as the linkage runs them.
TEST(ForkJoinTeamTest, EveryIndexOnceInOrderedParts) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> len(0, 5000);
  for (const int threads : {1, 2, 3, 7}) {
    ForkJoinTeam team(threads);
    ASSERT_EQ(team.size(), threads);
    std::vector<int> seen;
    for (int pass = 0; pass < 500; ++pass) {
      const size_t count = static_cast<size_t>(len(rng));
      seen.assign(count, 0);
      std::vector<std::pair<size_t, size_t>> parts(threads, {1, 0});
      team.Run(count, [&](int part, size_t lo, size_t hi) {
        parts[part] = {lo, hi};
        for (size_t i = lo; i < hi; ++i) seen[i] += 1 + pass;
      });
      size_t next = 0;
      for (const auto& [lo, hi] : parts) {
        ASSERT_EQ(lo, next) << threads << " threads, pass " << pass;
        ASSERT_LE(lo, hi);
        next = hi;
      }
      ASSERT_EQ(next, count);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(seen[i], 1 + pass);
    }
  }
}

// Passes far apart in time (the workers asleep on the futex in between)
// still run on every part.
TEST(ForkJoinTeamTest, WakesSleepingWorkers) {
  ForkJoinTeam team(4);
  for (int pass = 0; pass < 3; ++pass) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic<int> parts{0};
    team.Run(100, [&](int, size_t, size_t) { parts.fetch_add(1); });
    EXPECT_EQ(parts.load(), 4);
  }
}

}  // namespace
}  // namespace diarization::pipeline
