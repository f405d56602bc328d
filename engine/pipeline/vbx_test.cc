#include "engine/pipeline/vbx.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

// Two well-separated groups in D dimensions.
struct Data {
  int n, d;
  std::vector<double> x, phi;
  std::vector<int> truth;
};
Data TwoGroups(std::mt19937& rng, int n0, int n1, int d) {
  Data data{n0 + n1, d, {}, std::vector<double>(d, 2.0), {}};
  std::normal_distribution<double> g;
  std::vector<double> m0(d), m1(d);
  // Random centres, but 6 units apart in every dimension (unit noise), so
  // the groups are separated for every draw: with two independent random
  // centres they sometimes nearly coincided and a point's responsibility
  // dropped below the 0.99 the tests expect.
  for (int t = 0; t < d; ++t) {
    m0[t] = 3 * g(rng);
    m1[t] = m0[t] + (t % 2 == 0 ? 6.0 : -6.0);
  }
  for (int i = 0; i < data.n; ++i) {
    const bool second = i >= n0;
    data.truth.push_back(second);
    for (int t = 0; t < d; ++t)
      data.x.push_back((second ? m1 : m0)[t] + g(rng));
  }
  return data;
}

TEST(VbxTest, InitialGammaIsSmoothedOneHot) {
  const std::vector<int> labels = {0, 2, 1};
  const auto q = VbxInitialGamma(labels, 7.0);
  ASSERT_EQ(q.size(), 9u);
  const double hi = std::exp(7.0) / (std::exp(7.0) + 2),
               lo = 1 / (std::exp(7.0) + 2);
  EXPECT_NEAR(q[0], hi, 1e-15);
  EXPECT_NEAR(q[1], lo, 1e-15);
  EXPECT_NEAR(q[5], hi, 1e-15);
  EXPECT_EQ(VbxInitialGamma(labels, -1)[4], 0.0);
}

TEST(VbxTest, SeparatesTwoGroupsAndPrunesAnEmptySpeaker) {
  std::mt19937 rng(std::random_device{}());
  const Data data = TwoGroups(rng, 30, 50, 16);
  // Three initial clusters: the true two plus a spurious split of group 1.
  std::vector<int> init = data.truth;
  for (int i = 0; i < 5; ++i) init[30 + i] = 2;
  VbxOptions o;
  o.fa = 0.3;
  o.fb = 17;
  o.max_iters = 40;
  const VbxResult r = ClusterVbx(init, data.x, data.d, data.phi, o);
  ASSERT_EQ(r.pi.size(), 3u);
  for (int i = 0; i < data.n; ++i) {
    const double* row = &r.gamma[i * 3];
    EXPECT_NEAR(row[0] + row[1] + row[2], 1.0, 1e-12);
    EXPECT_GT(row[data.truth[i]], 0.99) << i;
  }
  EXPECT_NEAR(r.pi[0], 30.0 / 80, 0.02);
  EXPECT_NEAR(r.pi[1], 50.0 / 80, 0.02);
  EXPECT_LT(r.pi[2], 1e-3);
  for (size_t k = 1; k < r.elbo.size(); ++k)
    EXPECT_GE(r.elbo[k], r.elbo[k - 1] - 1e-9);
}

TEST(VbxTest, HmmWithoutSelfLoopsIsTheGmmModel) {
  // loopP = 0 makes the transition matrix π for every frame: forward–backward
  // must then give pyannote's independent (GMM) responsibilities.
  std::mt19937 rng(std::random_device{}());
  const Data data = TwoGroups(rng, 12, 9, 8);
  std::vector<int> init(data.n);
  for (int i = 0; i < data.n; ++i) init[i] = i % 3;
  VbxOptions gmm;
  gmm.max_iters = 5;
  gmm.epsilon = -1e300;  // run all iterations
  VbxOptions hmm = gmm;
  hmm.hmm = true;
  const VbxResult a = ClusterVbx(init, data.x, data.d, data.phi, gmm);
  const VbxResult b = ClusterVbx(init, data.x, data.d, data.phi, hmm);
  // Both paths add eps = 1e-8 inside log(π + eps), which the HMM applies to
  // rows summing to 1 + S·eps: agreement is to ~eps, not to rounding.
  ASSERT_EQ(a.gamma.size(), b.gamma.size());
  for (size_t i = 0; i < a.gamma.size(); ++i)
    EXPECT_NEAR(a.gamma[i], b.gamma[i], 1e-7);
  for (size_t k = 0; k < a.pi.size(); ++k) EXPECT_NEAR(a.pi[k], b.pi[k], 1e-7);
  for (size_t k = 0; k < a.elbo.size(); ++k)
    EXPECT_NEAR(a.elbo[k], b.elbo[k], 1e-6);
}

TEST(VbxTest, StickyHmmResponsibilitiesAreNormalised) {
  std::mt19937 rng(std::random_device{}());
  Data data = TwoGroups(rng, 20, 20, 4);
  std::vector<int> init = data.truth;
  VbxOptions o;
  o.loop_prob = 0.99;
  o.fa = 0.05;
  o.max_iters = 1;
  const VbxResult r = ClusterVbx(init, data.x, data.d, data.phi, o);
  for (int i = 0; i < data.n; ++i)
    EXPECT_NEAR(r.gamma[2 * i] + r.gamma[2 * i + 1], 1.0, 1e-9);
}

}  // namespace
}  // namespace diarization::pipeline
