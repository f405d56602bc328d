#include "engine/pipeline/kmeans.h"

#include <map>
#include <random>
#include <vector>

#include "engine/pipeline/kmeans_numpy_sums.h"
#include "engine/pipeline/kmeans_random_state.h"
#include "gtest/gtest.h"

// Exact agreement with scikit-learn is kmeans_sklearn_parity_test's job
// (live, 1000 fresh problems); these are the cases known by construction
// and numpy's own published outputs.
namespace diarization::pipeline {
namespace {

TEST(NumpyRandomStateTest, MatchesNumpyForSeed42) {
  // np.random.MT19937()._legacy_seeding(42); random_raw() × 3.
  NumpyRandomState raw(42);
  EXPECT_EQ(raw.NextUint32(), 1608637542U);
  EXPECT_EQ(raw.NextUint32(), 3421126067U);
  EXPECT_EQ(raw.NextUint32(), 4083286876U);
  // np.random.RandomState(42).random_sample(3).
  NumpyRandomState r(42);
  EXPECT_EQ(r.RandomSample(), 0.3745401188473625);
  EXPECT_EQ(r.RandomSample(), 0.9507143064099162);
  EXPECT_EQ(r.RandomSample(), 0.7319939418114051);
}

TEST(NumpyRandomStateTest, RegeneratesTheStateAfter624Outputs) {
  // RandomState(7): random_sample(700) then uniform() (1402 outputs: the
  // state is regenerated twice).
  NumpyRandomState r(7);
  for (int i = 0; i < 700; ++i) r.RandomSample();
  EXPECT_EQ(r.RandomSample(), 0.059200845313875594);
}

TEST(NumpyRandomStateTest, ChoiceMatchesNumpy) {
  // RandomState(42): choice(10, p=[0.1]*10) → 3, then
  // choice(5, p=[.1, .2, .3, .2, .2]) → 4.
  NumpyRandomState r(42);
  EXPECT_EQ(r.Choice(std::vector<double>(10, 0.1)), 3);
  EXPECT_EQ(r.Choice(std::vector<double>{0.1, 0.2, 0.3, 0.2, 0.2}), 4);
}

TEST(NumpySumsTest, PairwiseOrderIsNumpys) {
  // 16 values: 8 accumulators, r[0] = 2^24 + 1 + 1 rounds twice to 2^24
  // while a sequential sum would also lose the ones; put the ones where
  // only pairwise grouping keeps them: r[1] = 1 + 1 = 2 survives.
  std::vector<float> a(16, 0.0f);
  a[0] = 16777216.0f;  // 2^24
  a[1] = 1.0f;
  a[9] = 1.0f;
  // pairwise: r0 = 2^24, r1 = 2, (r0 + r1) = 2^24 + 2 exactly.
  EXPECT_EQ(NumpyPairwiseSum(a.data(), 16), 16777218.0f);
  // Fewer than 8: sequential from 0, each +1 lost against 2^24.
  std::vector<float> b = {16777216.0f, 1.0f, 1.0f};
  EXPECT_EQ(NumpyPairwiseSum(b.data(), 3), 16777216.0f);
}

TEST(NumpySumsTest, EinsumLanesAreNumpys) {
  // 16 elements = one step of 4 vectors × 4 lanes: lane 0 gets v[12]², v[8]²,
  // v[4]², v[0]² in that order. 4096² = 2^24 first, then three 1s are lost
  // one by one unless added before it: numpy adds v[12]² first.
  std::vector<float> v(16, 0.0f);
  v[12] = 4096.0f;
  v[0] = v[4] = v[8] = 1.0f;
  EXPECT_EQ(NumpySquaredNorm(v.data(), 16), 16777216.0f);
  v[12] = 1.0f;
  v[0] = 4096.0f;  // now the big square comes last: 3 + 2^24 rounds to 2^24 + 4
  EXPECT_EQ(NumpySquaredNorm(v.data(), 16), 16777220.0f);
}

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
