#include "engine/common/parallel_ranges.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace diarization {
namespace {

using Body = std::function<void(int, int)>;

// The ranges a splitter ran the body on, and how many indices of [0, n) it
// visited other than exactly once.
struct Visits {
  std::vector<std::pair<int, int>> ranges;
  int not_once = 0;
};

// Runs `split` (which calls the body it is given on its ranges, from any
// threads) and records what it visited.
Visits Record(int n, const std::function<void(const Body&)>& split) {
  std::vector<std::atomic<int>> seen(n);
  std::mutex mu;
  Visits v;
  split([&](int b, int e) {
    for (int i = b; i < e; ++i) seen[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    v.ranges.push_back({b, e});
  });
  for (int i = 0; i < n; ++i) v.not_once += seen[i].load() != 1;
  return v;
}

// Every index of [0, n) is visited exactly once, in ranges that respect the
// thread cap and the minimum length, for fresh random shapes.
TEST(ParallelRangesTest, EvenRangesCoverEveryIndexOnce) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(0, 5000)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 9)(rng);
    const int min_len = std::uniform_int_distribution<int>(1, 700)(rng);
    const Visits v = Record(
        n, [&](const Body& body) { ForEvenRanges(n, threads, min_len, body); });
    ASSERT_EQ(v.not_once, 0) << "n " << n;
    const std::vector<std::pair<int, int>>& ranges = v.ranges;
    if (n == 0) {
      EXPECT_TRUE(ranges.empty());
      continue;
    }
    EXPECT_LE(static_cast<int>(ranges.size()), threads);
    if (ranges.size() > 1) {
      for (const auto& [b, e] : ranges) EXPECT_GE(e - b, min_len);
    }
  }
}

// Every row of the triangle once, in at most the allowed number of ranges,
// each holding about its share of the n(n−1)/2 entries (within one row's),
// for fresh random shapes.
TEST(ParallelRangesTest, UpperTriangleRowsSplitTheAreaEvenly) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(0, 5000)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 9)(rng);
    const int min_rows = std::uniform_int_distribution<int>(1, 700)(rng);
    const Visits v = Record(n, [&](const Body& body) {
      ForUpperTriangleRows(n, threads, min_rows, body);
    });
    ASSERT_EQ(v.not_once, 0) << "n " << n;
    const std::vector<std::pair<int, int>>& ranges = v.ranges;
    if (n == 0) {
      EXPECT_TRUE(ranges.empty());
      continue;
    }
    const int allowed = std::max(1, std::min(threads, n / min_rows));
    ASSERT_LE(static_cast<int>(ranges.size()), allowed);
    const double share = 0.5 * n * (n - 1.0) / ranges.size();
    for (const auto& [b, e] : ranges) {
      double area = 0;
      for (int i = b; i < e; ++i) area += n - 1 - i;
      EXPECT_NEAR(area, share, n) << "n " << n << " rows " << b << ".." << e;
    }
  }
}

TEST(ParallelRangesTest, RunRangesRunsEachGivenRange) {
  const std::vector<int> bounds = {3, 3, 10, 11, 40};
  std::mutex mu;
  std::set<std::pair<int, int>> got;
  RunRanges(bounds, [&](int b, int e) {
    std::lock_guard<std::mutex> lock(mu);
    got.insert({b, e});
  });
  EXPECT_EQ(got, (std::set<std::pair<int, int>>{
                     {3, 3}, {3, 10}, {10, 11}, {11, 40}}));
  int calls = 0;
  RunRanges(std::vector<int>{5}, [&](int, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace diarization
