#include "engine/models/format/random_model.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "absl/strings/match.h"
#include "engine/models/format/model_specs.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

std::vector<float> Floats(const TensorData& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

const TensorData& Get(const std::vector<TensorData>& ts,
                      const std::string& name) {
  for (const TensorData& t : ts) {
    if (t.spec.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return ts.front();
}

struct Stats {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

Stats Compute(const std::vector<float>& v) {
  Stats s;
  for (float x : v) {
    s.mean += x;
    s.min = std::min<double>(s.min, x);
    s.max = std::max<double>(s.max, x);
  }
  s.mean /= v.size();
  for (float x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(s.stddev / v.size());
  return s;
}

TEST(RandomModelTest, SameSeedSameBytesOtherSeedOtherBytes) {
  for (auto make : {&RandomPyanNetTensors, &RandomResNet34Tensors}) {
    const auto a = make(3), b = make(3), c = make(4);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].bytes, b[i].bytes) << a[i].spec.name;
      const bool fixed = absl::EndsWith(a[i].spec.name, "window_") ||
                         absl::EndsWith(a[i].spec.name, ".n_") ||
                         a[i].spec.dtype == DType::kI64;
      if (!fixed) {
        EXPECT_NE(a[i].bytes, c[i].bytes) << a[i].spec.name;
      }
    }
  }
}

TEST(RandomModelTest, TensorsFollowTheSpecs) {
  const auto seg = RandomPyanNetTensors(1);
  ASSERT_EQ(seg.size(), PyanNetTensorSpecs().size());
  for (size_t i = 0; i < seg.size(); ++i) {
    EXPECT_EQ(seg[i].spec.name, PyanNetTensorSpecs()[i].name);
    EXPECT_EQ(seg[i].spec.shape, PyanNetTensorSpecs()[i].shape);
    for (float x : Floats(seg[i])) ASSERT_TRUE(std::isfinite(x));
  }
  const auto emb = RandomResNet34Tensors(1);
  ASSERT_EQ(emb.size(), ResNet34TensorSpecs().size());
  for (size_t i = 0; i < emb.size(); ++i) {
    EXPECT_EQ(emb[i].spec.name, ResNet34TensorSpecs()[i].name);
    EXPECT_EQ(emb[i].bytes.size(),
              static_cast<size_t>(DTypeSize(emb[i].spec.dtype) *
                                  std::max<int64_t>(1, [&] {
                                    int64_t n = 1;
                                    for (int64_t d : emb[i].spec.shape) n *= d;
                                    return n;
                                  }())));
  }
}

// models.md §1.1: window_[j] = 0.54 − 0.46·cos(2πj/250),
// n_[j] = 2π·(j−125)/16000. Computed here in double, independently of the
// float32 operation order the implementation copies from asteroid.
TEST(RandomModelTest, SincBuffersMatchTheSpecFormulas) {
  const auto window = SincWindowBuffer();
  const auto n = SincTimeBuffer();
  ASSERT_EQ(window.size(), 125u);
  ASSERT_EQ(n.size(), 125u);
  for (int j = 0; j < 125; ++j) {
    const double w = 0.54 - 0.46 * std::cos(2 * std::numbers::pi * j / 250);
    EXPECT_NEAR(window[j], w, 1e-7) << j;
    const double t = 2 * std::numbers::pi * (j - 125) / 16000.0;
    EXPECT_NEAR(n[j], t, 1e-6 * std::abs(t)) << j;
  }
  EXPECT_FLOAT_EQ(window[0], 0.08f);
}

TEST(RandomModelTest, SincBandsAreInNaturalRanges) {
  const auto seg = RandomPyanNetTensors(5);
  const auto low = Floats(Get(seg, "sincnet.conv1d.0.filterbank.low_hz_"));
  const auto band = Floats(Get(seg, "sincnet.conv1d.0.filterbank.band_hz_"));
  for (int k = 0; k < 40; ++k) {
    EXPECT_GT(low[k], 25.0f);
    EXPECT_LT(low[k], 7500.0f);
    EXPECT_GT(band[k], 0.0f);
    if (k > 0) {
      EXPECT_GT(low[k], low[k - 1] * 0.9f) << "mel-spaced";
    }
  }
  EXPECT_LT(low[0], 40.0f);
  EXPECT_GT(low[39], 6000.0f);
}

TEST(RandomModelTest, StatisticsAreRealistic) {
  const auto seg = RandomPyanNetTensors(9);
  const Stats lstm = Compute(Floats(Get(seg, "lstm.weight_ih_l1")));
  const double bound = 4 / std::sqrt(128.0);
  EXPECT_NEAR(lstm.mean, 0, 0.01 * bound * 10);
  EXPECT_NEAR(lstm.stddev, bound / std::sqrt(3.0), 0.02 * bound);
  EXPECT_LE(lstm.max, bound);
  EXPECT_GE(lstm.min, -bound);

  const auto emb = RandomResNet34Tensors(9);
  const Stats var =
      Compute(Floats(Get(emb, "resnet.layer3.2.bn1.running_var")));
  EXPECT_GE(var.min, 0.5);
  EXPECT_LE(var.max, 2.0);
  const Stats mean =
      Compute(Floats(Get(emb, "resnet.layer3.2.bn1.running_mean")));
  EXPECT_NEAR(mean.stddev, 0.1, 0.03);
  const Stats gamma = Compute(Floats(Get(emb, "resnet.layer3.2.bn1.weight")));
  EXPECT_GT(gamma.stddev, 0.05) << "BN weights must not be all 1";
  const Stats beta = Compute(Floats(Get(emb, "resnet.layer3.2.bn1.bias")));
  EXPECT_GT(beta.stddev, 0.05) << "BN biases must not be all 0";
  // Box-Muller normals: N(0, 1/fan_in) for a 3x3 conv with 128 inputs.
  const Stats conv = Compute(Floats(Get(emb, "resnet.layer3.2.conv1.weight")));
  const double sd = 1 / std::sqrt(128.0 * 9);
  EXPECT_NEAR(conv.mean, 0, 0.01 * sd);
  EXPECT_NEAR(conv.stddev, sd, 0.01 * sd);
}

}  // namespace
}  // namespace diarization::models
