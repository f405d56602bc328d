#include "engine/common/parallel_ranges.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace diarization {
namespace {

// Every index of [0, n) is visited exactly once, in ranges that respect the
// thread cap and the minimum length, for fresh random shapes.
TEST(ParallelRangesTest, EvenRangesCoverEveryIndexOnce) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(0, 5000)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 9)(rng);
    const int min_len = std::uniform_int_distribution<int>(1, 700)(rng);
    std::vector<std::atomic<int>> seen(n);
    std::mutex mu;
    std::vector<std::pair<int, int>> ranges;
    ForEvenRanges(n, threads, min_len, [&](int b, int e) {
      for (int i = b; i < e; ++i) seen[i].fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      ranges.push_back({b, e});
    });
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(seen[i].load(), 1) << "n " << n << " index " << i;
    }
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
    std::vector<std::atomic<int>> seen(n);
    std::mutex mu;
    std::vector<std::pair<int, int>> ranges;
    ForUpperTriangleRows(n, threads, min_rows, [&](int b, int e) {
      for (int i = b; i < e; ++i) seen[i].fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      ranges.push_back({b, e});
    });
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(seen[i].load(), 1) << "n " << n << " row " << i;
    }
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
