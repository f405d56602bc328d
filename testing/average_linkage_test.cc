// Average linkage against the definition of UPGMA (the mean pairwise
// distance between the members of two clusters, globally smallest first) on
// fresh random points: moved with the function from engine/pipeline/ahc_test.
#include "testing/average_linkage.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {

TEST(AverageLinkageTest, MatchesANaiveImplementation) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<double> g;
  const int n = 40;
  std::vector<double> pts(n * 3);
  for (double& v : pts) v = g(rng);
  std::vector<double> d;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      double s = 0;
      for (int t = 0; t < 3; ++t)
        s += (pts[i * 3 + t] - pts[j * 3 + t]) *
             (pts[i * 3 + t] - pts[j * 3 + t]);
      d.push_back(std::sqrt(s));
    }
  }
  auto full = [&](int i, int j) {
    return i < j ? d[pipeline::CondensedIndex(n, i, j)]
                 : d[pipeline::CondensedIndex(n, j, i)];
  };
  // Naive UPGMA: mean pairwise distance between member sets, global minimum.
  std::vector<std::vector<int>> clusters(n);
  for (int i = 0; i < n; ++i) clusters[i] = {i};
  std::vector<double> heights;
  while (clusters.size() > 1) {
    double best = 1e300;
    size_t ba = 0, bb = 0;
    for (size_t a = 0; a < clusters.size(); ++a) {
      for (size_t b = a + 1; b < clusters.size(); ++b) {
        double s = 0;
        for (int i : clusters[a]) {
          for (int j : clusters[b]) s += full(i, j);
        }
        s /= clusters[a].size() * clusters[b].size();
        if (s < best) best = s, ba = a, bb = b;
      }
    }
    heights.push_back(best);
    clusters[ba].insert(clusters[ba].end(), clusters[bb].begin(),
                        clusters[bb].end());
    clusters.erase(clusters.begin() + bb);
  }
  std::vector<double> copy = d;
  const auto z = AverageLinkage(copy, n);
  ASSERT_EQ(z.size(), heights.size());
  for (size_t k = 0; k < z.size(); ++k)
    EXPECT_NEAR(z[k].distance, heights[k], 1e-9);
}

}  // namespace
}  // namespace diarization::testing
