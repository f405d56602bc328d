#include "engine/pipeline/assignment.h"

#include <algorithm>
#include <cmath>
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

}  // namespace
}  // namespace diarization::pipeline
