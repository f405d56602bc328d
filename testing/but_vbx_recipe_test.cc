// BUT's VBx example (AMI ES2005a): from the recipe's own x-vectors, transform
// and PLDA, the VB-HMM (loopP 0.99, Fa 0.3, Fb 17) reproduces exp/ES2005a.rttm
// exactly — a second, independent check of the general VBx.
#include "testing/but_vbx_recipe.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "gtest/gtest.h"
#include "testing/hdf5.h"
#include "testing/kaldi.h"
#include "testing/test_data.h"

namespace diarization::testing {
namespace {

TEST(ButVbxRecipeTest, TwoGmmThresholdSeparatesTwoModes) {
  std::vector<double> s;
  for (int i = 0; i < 300; ++i)
    s.push_back(0.1 * ((i % 7) - 3) / 3.0);  // around 0
  for (int i = 0; i < 100; ++i)
    s.push_back(0.8 + 0.1 * ((i % 5) - 2) / 2.0);  // around 0.8
  const double t = TwoGmmCalibrationThreshold(s);
  EXPECT_GT(t, 0.1);
  EXPECT_LT(t, 0.7);
}

TEST(ButVbxRecipeTest, MergeAdjacentLabels) {
  std::vector<double> st = {0.0, 0.24, 0.48, 3.0, 3.24};
  std::vector<double> en = {1.44, 1.68, 1.92, 4.44, 4.68};
  std::vector<int> lb = {0, 0, 1, 1, 1};
  MergeAdjacentLabels(st, en, lb);
  // (0,0) merge: [0, 1.68]; then label 1 overlaps → boundary at the middle.
  ASSERT_EQ(st.size(), 3u);
  EXPECT_DOUBLE_EQ(en[0], (1.68 + 0.48) / 2);
  EXPECT_DOUBLE_EQ(st[1], (1.68 + 0.48) / 2);
  EXPECT_DOUBLE_EQ(en[1], 1.92);
  EXPECT_DOUBLE_EQ(st[2], 3.0);
  EXPECT_EQ(lb, (std::vector<int>{0, 1, 1}));
}

TEST(ButVbxRecipeTest, ReproducesTheExampleRttm) {
  const std::string data = TestDataDir() + "/vbx-example/exp/";
  const std::string model = SharedModelsDir() + "/vbx-ResNet101_16kHz/";
  auto ark = ReadKaldiVectorArk(data + "ES2005a.ark");
  ASSERT_TRUE(ark.ok()) << ark.status();
  auto kplda = ReadKaldiPlda(model + "plda");
  ASSERT_TRUE(kplda.ok()) << kplda.status();
  auto mean1 = ReadHdf5Dataset(model + "transform.h5", "mean1");
  auto mean2 = ReadHdf5Dataset(model + "transform.h5", "mean2");
  auto lda = ReadHdf5Dataset(model + "transform.h5", "lda");
  ASSERT_TRUE(mean1.ok() && mean2.ok() && lda.ok())
      << mean1.status() << lda.status();
  ASSERT_EQ(lda->shape, (std::vector<int64_t>{256, 128}));
  auto plda = pipeline::BuildPlda(mean1->values, mean2->values, lda->values,
                                  kplda->mean, kplda->transform, kplda->psi);
  ASSERT_TRUE(plda.ok()) << plda.status();
  plda->scale_by_sqrt_dim = false;  // BUT's l2_norm has no √dim

  // Segment timing, in the ark's order.
  std::ifstream seg(data + "ES2005a.seg");
  ASSERT_TRUE(seg.good());
  std::vector<double> starts, ends;
  std::string name, file;
  double a, b;
  size_t i = 0;
  while (seg >> name >> file >> a >> b) {
    ASSERT_LT(i, ark->size());
    ASSERT_EQ(name, (*ark)[i++].key);
    starts.push_back(a);
    ends.push_back(b);
  }
  ASSERT_EQ(i, ark->size());
  const int n = static_cast<int>(ark->size());
  std::vector<float> x;
  for (const auto& v : *ark) {
    ASSERT_EQ(v.values.size(), 256u);
    for (double e : v.values) x.push_back(static_cast<float>(e));
  }
  const ButVbxResult result = RunButVbx(x, n, *plda, starts, ends);
  std::ifstream want(data + "ES2005a.rttm");
  const std::string expected((std::istreambuf_iterator<char>(want)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(ButRttm("ES2005a", result), expected);
}

}  // namespace
}  // namespace diarization::testing
