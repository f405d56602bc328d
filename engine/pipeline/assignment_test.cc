#include "engine/pipeline/assignment.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

// Best total over all injective assignments of min(rows, cols) pairs.
double BruteForceBest(const std::vector<double>& s, int rows, int cols) {
  std::vector<int> cols_perm(cols);
  std::iota(cols_perm.begin(), cols_perm.end(), 0);
  double best = -1e300;
  if (rows <= cols) {
    do {
      double t = 0;
      for (int r = 0; r < rows; ++r) t += s[r * cols + cols_perm[r]];
      best = std::max(best, t);
    } while (std::next_permutation(cols_perm.begin(), cols_perm.end()));
  } else {
    std::vector<int> rows_perm(rows);
    std::iota(rows_perm.begin(), rows_perm.end(), 0);
    do {
      double t = 0;
      for (int c = 0; c < cols; ++c) t += s[rows_perm[c] * cols + c];
      best = std::max(best, t);
    } while (std::next_permutation(rows_perm.begin(), rows_perm.end()));
  }
  return best;
}

TEST(AssignmentTest, HungarianIsOptimalOnRandomMatrices) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(-1, 3);
  for (int trial = 0; trial < 300; ++trial) {
    const int rows = 1 + trial % 4, cols = 1 + (trial / 4) % 6;
    std::vector<double> s(rows * cols);
    for (double& v : s) v = u(rng);
    const std::vector<int> col = LinearSumAssignmentMax(s, rows, cols);
    std::vector<bool> used(cols, false);
    double total = 0;
    int assigned = 0;
    for (int r = 0; r < rows; ++r) {
      if (col[r] < 0) continue;
      ASSERT_FALSE(used[col[r]]);
      used[col[r]] = true;
      total += s[r * cols + col[r]];
      ++assigned;
    }
    EXPECT_EQ(assigned, std::min(rows, cols));
    EXPECT_NEAR(total, BruteForceBest(s, rows, cols), 1e-12);
  }
}

TEST(AssignmentTest,
     ConstrainedArgmaxDropsInactiveRowsAndUsesDistinctClusters) {
  // One window, 3 local speakers, 2 clusters; speaker 2 inactive.
  std::vector<double> soft = {
      1.9,  1.8,  // both prefer cluster 0...
      1.7,  1.1,  // ...speaker 1 gets 0 (1.7+1.8 > 1.9+1.1)
      1.99, 1.99};
  const std::vector<bool> inactive = {false, false, true};
  const auto hard = ConstrainedArgmax(soft, 1, 2, inactive);
  EXPECT_EQ(hard, (std::vector<int>{1, 0, -2}));
  EXPECT_DOUBLE_EQ(soft[4], 1.1 - 1.0);  // min − 1 written like pyannote
}

TEST(AssignmentTest, NaNRowsFallBackToNanminAndArgmaxPicksNaN) {
  const double nan = std::nan("");
  std::vector<double> soft = {nan, nan, 1.5, 1.2, 1.0, 1.9};
  const auto hard = ConstrainedArgmax(soft, 1, 2, {false, false, false});
  EXPECT_TRUE(std::isnan(soft[0]));
  // NaN → nanmin = 1.0: the other two rows take their best distinct clusters.
  EXPECT_EQ(hard[1], 0);
  EXPECT_EQ(hard[2], 1);
  EXPECT_EQ(hard[0], -2);
  EXPECT_EQ(PlainArgmax(std::vector<double>{1.0, nan, 2.0}, 1, 3),
            (std::vector<int>{1}));
  EXPECT_EQ(PlainArgmax(std::vector<double>{1.0, 2.0, 2.0}, 1, 3),
            (std::vector<int>{1}));
}

TEST(AssignmentTest, SoftClustersAreOnePlusCosine) {
  const std::vector<float> e = {1, 0, 0, 1, 1, 1};
  const std::vector<double> c = {2, 0, 0, 3};
  const auto soft = SoftClusters(e, 3, 2, c, 2);
  EXPECT_NEAR(soft[0], 2.0, 1e-15);
  EXPECT_NEAR(soft[1], 1.0, 1e-15);
  EXPECT_NEAR(soft[4], 1.0 + std::sqrt(0.5), 1e-15);
}

TEST(AssignmentTest, CentroidsKeepSpeakersAbovePriorInOrder) {
  const std::vector<float> train = {1, 0, 0, 1, 1, 1};
  const std::vector<double> gamma = {1, 0, 0, 0, 1, 0, 0.5, 0.5, 0};
  const std::vector<double> pi = {0.5, 0.5, 1e-8};
  int kept = 0;
  const auto c = WeightedCentroids(train, 3, 2, gamma, 3, pi, 1e-7, &kept);
  EXPECT_EQ(kept, 2);
  EXPECT_NEAR(c[0], 1.5 / 1.5, 1e-15);
  EXPECT_NEAR(c[1], 0.5 / 1.5, 1e-15);
  const auto m = MeanCentroids(train, 3, 2, std::vector<int>{1, 0, 1}, 2);
  EXPECT_EQ(m, (std::vector<double>{0, 1, 1, 0.5}));
}

// The rows and windows split over threads: for fresh random embeddings
// (NaN rows included), centroids and inactive rows, every thread count
// gives the one-thread soft scores and assignments bit for bit. Enough rows
// (3 x 3000) that 2-7 threads really split them.
TEST(AssignmentTest, ThreadCountDoesNotChangeABit) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int windows = 3000, rows = windows * 3, d = 64, k = 4;
  std::vector<float> e(static_cast<size_t>(rows) * d);
  for (float& v : e) v = g(rng);
  for (int r = 0; r < rows; r += 97) e[static_cast<size_t>(r) * d] = NAN;
  std::vector<double> c(static_cast<size_t>(k) * d);
  for (double& v : c) v = g(rng);
  std::vector<bool> inactive(rows);
  for (int r = 0; r < rows; ++r) inactive[r] = (r * 7919) % 5 == 0;
  std::vector<double> soft_one = SoftClusters(e, rows, d, c, k, 1);
  std::vector<double> work_one = soft_one;
  const std::vector<int> hard_one =
      ConstrainedArgmax(work_one, windows, k, inactive, 1);
  for (int threads : {2, 3, 7}) {
    std::vector<double> soft = SoftClusters(e, rows, d, c, k, threads);
    ASSERT_EQ(soft.size(), soft_one.size());
    ASSERT_EQ(
        std::memcmp(soft.data(), soft_one.data(), soft.size() * sizeof(double)),
        0)
        << threads << " threads";
    EXPECT_EQ(ConstrainedArgmax(soft, windows, k, inactive, threads), hard_one)
        << threads << " threads";
  }
}

}  // namespace
}  // namespace diarization::pipeline
