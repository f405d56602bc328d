// CpuEmbeddingModel against an independent float64 ResNet34 + TSTP written
// with plain loops from ../shared/specs/models.md §4 (BatchNorm applied, not
// folded), on real speech with deterministic random weights; plus the
// multi-mask trunk sharing against one run per mask. Parity with pyannote's
// own WeSpeakerResNet34 is in cpu_parity_test.cc.
#include "engine/models/cpu/cpu_embedding_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/fbank.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "testing/random_weights.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

std::vector<double> D(const SafetensorsFile& f, const std::string& name) {
  const TensorView* t = f.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  auto v = t->f32();
  return std::vector<double>(v.begin(), v.end());
}

struct Tensor {
  int c = 0, h = 0, w = 0;
  std::vector<double> v;
  double& at(int ci, int y, int x) { return v[(ci * h + y) * w + x]; }
  double at(int ci, int y, int x) const { return v[(ci * h + y) * w + x]; }
};

Tensor Conv(const Tensor& x, const std::vector<double>& wt, int out, int k,
            int stride) {
  const int pad = k / 2;
  Tensor p{x.c, x.h + 2 * pad, x.w + 2 * pad, {}};
  p.v.assign(p.c * p.h * p.w, 0.0);
  for (int c = 0; c < x.c; ++c)
    for (int y = 0; y < x.h; ++y)
      for (int z = 0; z < x.w; ++z) p.at(c, y + pad, z + pad) = x.at(c, y, z);
  Tensor o{out,
           (x.h + 2 * pad - k) / stride + 1,
           (x.w + 2 * pad - k) / stride + 1,
           {}};
  o.v.assign(o.c * o.h * o.w, 0.0);
  for (int oc = 0; oc < out; ++oc) {
    for (int ic = 0; ic < x.c; ++ic) {
      for (int kh = 0; kh < k; ++kh) {
        for (int kw = 0; kw < k; ++kw) {
          const double wv = wt[((oc * x.c + ic) * k + kh) * k + kw];
          for (int y = 0; y < o.h; ++y) {
            const double* src = &p.v[(ic * p.h + y * stride + kh) * p.w + kw];
            double* dst = &o.v[(oc * o.h + y) * o.w];
            for (int z = 0; z < o.w; ++z) dst[z] += wv * src[z * stride];
          }
        }
      }
    }
  }
  return o;
}

void BatchNorm(const SafetensorsFile& f, const std::string& p, Tensor& x,
               bool relu) {
  auto g = D(f, p + ".weight"), b = D(f, p + ".bias");
  auto m = D(f, p + ".running_mean"), var = D(f, p + ".running_var");
  for (int c = 0; c < x.c; ++c) {
    for (int i = 0; i < x.h * x.w; ++i) {
      double& v = x.v[c * x.h * x.w + i];
      v = (v - m[c]) / std::sqrt(var[c] + 1e-5) * g[c] + b[c];
      if (relu) v = std::max(v, 0.0);
    }
  }
}

// features: (998, 80) fbank; masks: S × 589. Returns S × 256.
std::vector<double> ReferenceEmbeddings(const SafetensorsFile& f,
                                        const std::vector<float>& features,
                                        const std::vector<float>& masks,
                                        int num_masks) {
  Tensor x{1, 80, 998, {}};
  x.v.resize(80 * 998);
  for (int t = 0; t < 998; ++t)
    for (int m = 0; m < 80; ++m) x.at(0, m, t) = features[t * 80 + m];
  x = Conv(x, D(f, "resnet.conv1.weight"), 32, 3, 1);
  BatchNorm(f, "resnet.bn1", x, true);
  const int blocks[4] = {3, 4, 6, 3}, planes[4] = {32, 64, 128, 256};
  for (int l = 0; l < 4; ++l) {
    for (int b = 0; b < blocks[l]; ++b) {
      const std::string p = absl::StrCat("resnet.layer", l + 1, ".", b);
      const int stride = (b == 0 && l > 0) ? 2 : 1;
      Tensor y = Conv(x, D(f, p + ".conv1.weight"), planes[l], 3, stride);
      BatchNorm(f, p + ".bn1", y, true);
      y = Conv(y, D(f, p + ".conv2.weight"), planes[l], 3, 1);
      BatchNorm(f, p + ".bn2", y, false);
      Tensor sc = x;
      if (b == 0 && l > 0) {
        sc = Conv(x, D(f, p + ".shortcut.0.weight"), planes[l], 1, stride);
        BatchNorm(f, p + ".shortcut.1", sc, false);
      }
      for (size_t i = 0; i < y.v.size(); ++i)
        y.v[i] = std::max(y.v[i] + sc.v[i], 0.0);
      x = std::move(y);
    }
  }
  EXPECT_EQ(x.c, 256);
  EXPECT_EQ(x.h, 10);
  EXPECT_EQ(x.w, 125);
  auto seg_w = D(f, "resnet.seg_1.weight"), seg_b = D(f, "resnet.seg_1.bias");
  std::vector<double> out(num_masks * 256);
  for (int s = 0; s < num_masks; ++s) {
    // Nearest resampling 589 → 125 (models.md §4), weights w'.
    std::vector<double> w(125);
    double v1 = 1e-8, v2 = 0;
    for (int j = 0; j < 125; ++j) {
      const int idx = std::min(static_cast<int>(std::floor(j * 4.712f)), 588);
      w[j] = masks[s * 589 + idx];
      v1 += w[j];
      v2 += w[j] * w[j];
    }
    std::vector<double> stats(5120);
    for (int feat = 0; feat < 2560; ++feat) {
      const double* xf = &x.v[feat * 125];
      double mean = 0;
      for (int j = 0; j < 125; ++j) mean += w[j] * xf[j];
      mean /= v1;
      double var = 0;
      for (int j = 0; j < 125; ++j)
        var += w[j] * (xf[j] - mean) * (xf[j] - mean);
      var /= (v1 - v2 / v1 + 1e-8);
      stats[feat] = mean;
      stats[2560 + feat] = std::sqrt(var);
    }
    for (int o = 0; o < 256; ++o) {
      double acc = seg_b[o];
      for (int i = 0; i < 5120; ++i) acc += seg_w[o * 5120 + i] * stats[i];
      out[s * 256 + o] = acc;
    }
  }
  return out;
}

double RelL2(const float* a, const double* b, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name);
}

// Masks like pyannote's: runs of activity, one speaker silent.
std::vector<float> MakeMasks(int num, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> m(num * 589, 0.0f);
  for (int s = 0; s < num; ++s) {
    if (s % 3 == 2) continue;  // all-zero mask
    int t = 0;
    bool on = (s % 2 == 0);
    while (t < 589) {
      const int len = std::uniform_int_distribution<int>(10, 120)(rng);
      for (int j = t; j < std::min(589, t + len); ++j)
        m[s * 589 + j] = on ? 1.0f : 0.0f;
      t += len;
      on = !on;
    }
  }
  return m;
}

class CpuEmbeddingModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = TempPath("resnet_random.safetensors");
    ASSERT_TRUE(testing::WriteRandomResNet34(path, 99).ok());
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = std::move(*file);
    auto model = CpuEmbeddingModel::Create(*file_, {.threads = 2});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    wav_ = testing::ReadWavOrDie("pyannote-audio/sample/sample.wav");
  }
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<CpuEmbeddingModel> model_;
  std::vector<float> wav_;
};

TEST(NearestMaskFrameTest, MatchesPyTorchNearest) {
  const int expected_start[] = {0, 4, 9, 14, 18, 23};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(NearestMaskFrame(j), expected_start[j]);
  EXPECT_EQ(NearestMaskFrame(124), 584);
  for (int j = 1; j < 125; ++j)
    EXPECT_GT(NearestMaskFrame(j), NearestMaskFrame(j - 1));
}

TEST_F(CpuEmbeddingModelTest, MatchesFloat64ReferenceOnSpeech) {
  std::vector<float> window(wav_.begin() + 48000,
                            wav_.begin() + 48000 + kWindowSamples);
  const int num_masks = 3;
  std::vector<float> masks = MakeMasks(num_masks, 5);
  masks[1 * 589 + 300] = 1.0f;  // make mask 1 non-trivial either way
  std::vector<float> out(num_masks * 256);
  ASSERT_TRUE(model_->Run(window, 1, masks, num_masks, out).ok());
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok());
  std::vector<float> feats(998 * 80);
  ASSERT_TRUE((*fbank)->Compute(window, feats).ok());
  auto ref = ReferenceEmbeddings(*file_, feats, masks, num_masks);
  for (int s = 0; s < num_masks; ++s) {
    const double rel = RelL2(out.data() + s * 256, ref.data() + s * 256, 256);
    std::cerr << "embedding vs float64 reference, mask " << s << ": rel L2 "
              << rel << "\n";
    // float32 through 33 convolutions (BN folded) and pooling.
    EXPECT_LT(rel, 1e-5);
  }
  // The all-zero mask (index 2) gives seg_1's bias exactly.
  auto bias = file_->Find("resnet.seg_1.bias")->f32();
  for (int o = 0; o < 256; ++o) EXPECT_EQ(out[2 * 256 + o], bias[o]);
}

TEST_F(CpuEmbeddingModelTest, SharedTrunkEqualsOneRunPerMask) {
  const int batch = 2, num_masks = 3;
  std::vector<float> windows(wav_.begin(),
                             wav_.begin() + batch * kWindowSamples);
  std::vector<float> masks = MakeMasks(batch * num_masks, 11);
  std::vector<float> shared(batch * num_masks * 256);
  ASSERT_TRUE(model_->Run(windows, batch, masks, num_masks, shared).ok());
  for (int i = 0; i < batch; ++i) {
    for (int s = 0; s < num_masks; ++s) {
      std::vector<float> one(256);
      ASSERT_TRUE(model_
                      ->Run(std::span<const float>(windows).subspan(
                                i * kWindowSamples, kWindowSamples),
                            1,
                            std::span<const float>(masks).subspan(
                                (i * num_masks + s) * 589, 589),
                            1, one)
                      .ok());
      std::vector<double> oned(one.begin(), one.end());
      const double rel =
          RelL2(shared.data() + (i * num_masks + s) * 256, oned.data(), 256);
      EXPECT_LT(rel, 1e-6) << "window " << i << " mask " << s;
    }
  }
}

// A window's embeddings do not depend on its batch-mates or on the batch
// size: the engine batches windows of different jobs together, so a job's
// result must not depend on what else was running. 9 windows (1 s apart)
// in one call, one call each, and in calls of 2 and 4, bit for bit.
TEST_F(CpuEmbeddingModelTest, EmbeddingOfAWindowDoesNotDependOnItsBatch) {
  const int n = 9, num_masks = 3;
  std::vector<float> windows(static_cast<size_t>(n) * kWindowSamples);
  for (int i = 0; i < n; ++i) {
    std::copy(wav_.begin() + i * 16000,
              wav_.begin() + i * 16000 + kWindowSamples,
              windows.begin() + static_cast<size_t>(i) * kWindowSamples);
  }
  std::vector<float> masks = MakeMasks(n * num_masks, 17);
  const size_t per_window = num_masks * 256;
  std::vector<float> all(n * per_window);
  ASSERT_TRUE(model_->Run(windows, n, masks, num_masks, all).ok());
  for (int chunk : {1, 2, 4}) {
    for (int first = 0; first < n; first += chunk) {
      const int count = std::min(chunk, n - first);
      std::vector<float> part(count * per_window);
      ASSERT_TRUE(model_
                      ->Run(std::span<const float>(windows).subspan(
                                static_cast<size_t>(first) * kWindowSamples,
                                static_cast<size_t>(count) * kWindowSamples),
                            count,
                            std::span<const float>(masks).subspan(
                                static_cast<size_t>(first) * num_masks * 589,
                                static_cast<size_t>(count) * num_masks * 589),
                            num_masks, part)
                      .ok());
      for (size_t k = 0; k < part.size(); ++k) {
        ASSERT_EQ(part[k], all[first * per_window + k])
            << "calls of " << chunk << ", window " << first + k / per_window
            << ", value " << k % per_window;
      }
    }
  }
}

TEST_F(CpuEmbeddingModelTest, RejectsBadShapes) {
  std::vector<float> window(kWindowSamples), masks(3 * 589), out(3 * 256);
  EXPECT_EQ(model_->Run(window, 1, masks, 2, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model_->Run(window, 2, masks, 3, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model_->Run(window, 1, masks, 0, out).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> small(10);
  EXPECT_EQ(model_->Run(window, 1, masks, 3, small).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace diarization::models
