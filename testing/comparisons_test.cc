#include "testing/comparisons.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {

TEST(ComparisonsTest, MaxAbsDiffFindsTheLargestRandomPerturbation) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> a(1000), b;
  for (float& x : a) x = n(rng);
  b = a;
  const size_t at = rng() % a.size();
  b[at] += 0.25f;
  EXPECT_NEAR(MaxAbsDiff(a, b), 0.25, 1e-6);
  EXPECT_EQ(MaxAbsDiff(a, a), 0.0);
  b[at] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isinf(MaxAbsDiff(a, b)));
  EXPECT_TRUE(std::isinf(MaxAbsDiff(a, std::vector<float>(3))));
}

TEST(ComparisonsTest, MaxRowRelativeDiffIsPerRow) {
  // Row 0 off by 1 % of its norm, row 1 (10x larger) off by the same
  // absolute amount, i.e. 0.1 %: the worst row is 1 %.
  std::vector<float> ref = {3, 4, 30, 40};
  std::vector<float> got = {3, 4.05f, 30, 40.05f};
  EXPECT_NEAR(MaxRowRelativeDiff(got, ref, 2), 0.01, 1e-6);
  EXPECT_TRUE(std::isinf(MaxRowRelativeDiff(got, ref, 3)));
}

TEST(ComparisonsTest, DecisionFlipsIgnoresNearTies) {
  // Frame 0: clear winner 0, got picks 1 -> flip. Frame 1: tie within 0.01,
  // got picks the other -> not counted at margin 0.1.
  std::vector<float> ref = {0.0f, -5.0f, -1.0f, -1.005f};
  std::vector<float> got = {-5.0f, 0.0f, -1.005f, -1.0f};
  EXPECT_EQ(DecisionFlips(got, ref, 2, 0.1), 1);
  EXPECT_EQ(DecisionFlips(got, ref, 2, 0.0), 2);
  EXPECT_EQ(DecisionFlips(ref, ref, 2, 0.0), 0);
}

}  // namespace
}  // namespace diarization::testing
