#include "engine/pipeline/kmeans.h"

#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

TEST(KMeansTest, RecoversSeparatedClustersDeterministically) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g(0, 0.05f);
  const int k = 4, per = 25, d = 8;
  std::vector<float> x;
  std::vector<int> truth;
  for (int c = 0; c < k; ++c) {
    for (int i = 0; i < per; ++i) {
      for (int t = 0; t < d; ++t) x.push_back((t == c ? 1.0f : 0.0f) + g(rng));
      truth.push_back(c);
    }
  }
  const auto labels = KMeans(x, k * per, d, k);
  std::map<int, int> mapping;
  for (size_t i = 0; i < labels.size(); ++i) {
    auto [it, fresh] = mapping.emplace(truth[i], labels[i]);
    EXPECT_EQ(it->second, labels[i]) << i;
  }
  EXPECT_EQ(mapping.size(), static_cast<size_t>(k));
  EXPECT_EQ(KMeans(x, k * per, d, k), labels);  // same seed, same answer
  EXPECT_EQ(KMeans(x, k * per, d, 1), std::vector<int>(k * per, 0));
}

}  // namespace
}  // namespace diarization::pipeline
