// CpuSegmentationModel against an independent float64 PyanNet written with
// plain loops from ../shared/specs/models.md §1, on real speech with
// deterministic random weights. Parity with pyannote's own PyanNet is in
// cpu_parity_test.cc.
#include "engine/models/cpu_segmentation_model.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/safetensors.h"
#include "engine/models/testing/random_weights.h"
#include "engine/models/testing/wav.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

std::vector<double> D(const SafetensorsFile& f, const std::string& name) {
  const TensorView* t = f.Find(name);
  EXPECT_NE(t, nullptr) << name;
  auto v = t->f32();
  return std::vector<double>(v.begin(), v.end());
}

// (channels, len) → maxpool 3 → InstanceNorm(affine) → leaky ReLU.
std::vector<double> PoolNormLeaky(const std::vector<double>& x, int channels,
                                  int len, const std::vector<double>& g,
                                  const std::vector<double>& b) {
  const int out_len = len / 3;
  std::vector<double> y(channels * out_len);
  for (int c = 0; c < channels; ++c) {
    double mean = 0, var = 0;
    for (int t = 0; t < out_len; ++t) {
      double m = std::max(
          {x[c * len + 3 * t], x[c * len + 3 * t + 1], x[c * len + 3 * t + 2]});
      y[c * out_len + t] = m;
      mean += m;
    }
    mean /= out_len;
    for (int t = 0; t < out_len; ++t) {
      var += (y[c * out_len + t] - mean) * (y[c * out_len + t] - mean);
    }
    var /= out_len;
    for (int t = 0; t < out_len; ++t) {
      double v =
          (y[c * out_len + t] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
      y[c * out_len + t] = v < 0 ? 0.01 * v : v;
    }
  }
  return y;
}

std::vector<double> Conv1d(const std::vector<double>& x, int ic, int len,
                           const std::vector<double>& w,
                           const std::vector<double>& bias, int oc, int k) {
  const int out_len = len - k + 1;
  std::vector<double> y(oc * out_len);
  for (int o = 0; o < oc; ++o) {
    for (int t = 0; t < out_len; ++t) {
      double s = bias[o];
      for (int i = 0; i < ic; ++i) {
        for (int j = 0; j < k; ++j)
          s += w[(o * ic + i) * k + j] * x[i * len + t + j];
      }
      y[o * out_len + t] = s;
    }
  }
  return y;
}

// Returns (589, 7) log-probabilities.
std::vector<double> ReferencePyanNet(const SafetensorsFile& f,
                                     const float* wave) {
  const int n = 160000;
  // 1. InstanceNorm on the waveform.
  std::vector<double> x(wave, wave + n);
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  const double g0 = D(f, "sincnet.wav_norm1d.weight")[0];
  const double b0 = D(f, "sincnet.wav_norm1d.bias")[0];
  for (double& v : x) v = (v - mean) / std::sqrt(var + 1e-5) * g0 + b0;
  // 2. Sinc filters (models.md §1.1) in double.
  const std::string fb = "sincnet.conv1d.0.filterbank.";
  auto low_hz = D(f, fb + "low_hz_"), band_hz = D(f, fb + "band_hz_");
  auto window = D(f, fb + "window_"), nn = D(f, fb + "n_");
  std::vector<double> h(80 * 251);
  for (int k = 0; k < 40; ++k) {
    const double low = 50 + std::abs(low_hz[k]);
    const double high =
        std::min(std::max(low + 50 + std::abs(band_hz[k]), 50.0), 8000.0);
    const double band = high - low;
    for (int j = 0; j < 125; ++j) {
      double c = (std::sin(high * nn[j]) - std::sin(low * nn[j])) /
                 (nn[j] / 2) * window[j];
      double s = (std::cos(low * nn[j]) - std::cos(high * nn[j])) /
                 (nn[j] / 2) * window[j];
      h[k * 251 + j] = h[k * 251 + 250 - j] = c / (2 * band);
      h[(40 + k) * 251 + j] = s / (2 * band);
      h[(40 + k) * 251 + 250 - j] = -s / (2 * band);
    }
    h[k * 251 + 125] = 1.0;
    h[(40 + k) * 251 + 125] = 0.0;
  }
  // 3. Strided conv and |.|.
  const int l0 = 15975;
  std::vector<double> c0(80 * l0);
  for (int c = 0; c < 80; ++c) {
    for (int t = 0; t < l0; ++t) {
      double s = 0;
      for (int m = 0; m < 251; ++m) s += h[c * 251 + m] * x[10 * t + m];
      c0[c * l0 + t] = std::abs(s);
    }
  }
  auto p0 = PoolNormLeaky(c0, 80, l0, D(f, "sincnet.norm1d.0.weight"),
                          D(f, "sincnet.norm1d.0.bias"));
  auto c1 = Conv1d(p0, 80, 5325, D(f, "sincnet.conv1d.1.weight"),
                   D(f, "sincnet.conv1d.1.bias"), 60, 5);
  auto p1 = PoolNormLeaky(c1, 60, 5321, D(f, "sincnet.norm1d.1.weight"),
                          D(f, "sincnet.norm1d.1.bias"));
  auto c2 = Conv1d(p1, 60, 1773, D(f, "sincnet.conv1d.2.weight"),
                   D(f, "sincnet.conv1d.2.bias"), 60, 5);
  auto p2 = PoolNormLeaky(c2, 60, 1769, D(f, "sincnet.norm1d.2.weight"),
                          D(f, "sincnet.norm1d.2.bias"));
  // 10–11. (frame, feature) through 4 bidirectional LSTM layers.
  const int T = 589;
  int in = 60;
  std::vector<double> seq(T * in);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < 60; ++c) seq[t * 60 + c] = p2[c * T + t];
  auto sigmoid = [](double z) { return 1.0 / (1.0 + std::exp(-z)); };
  for (int layer = 0; layer < 4; ++layer) {
    std::vector<double> out(T * 256);
    for (int d = 0; d < 2; ++d) {
      const std::string s = absl::StrCat("_l", layer, d ? "_reverse" : "");
      auto wih = D(f, "lstm.weight_ih" + s), whh = D(f, "lstm.weight_hh" + s);
      auto bih = D(f, "lstm.bias_ih" + s), bhh = D(f, "lstm.bias_hh" + s);
      std::vector<double> hh(128, 0.0), cc(128, 0.0), z(512);
      for (int step = 0; step < T; ++step) {
        const int t = d ? T - 1 - step : step;
        for (int r = 0; r < 512; ++r) {
          double acc = bih[r] + bhh[r];
          for (int i = 0; i < in; ++i) acc += wih[r * in + i] * seq[t * in + i];
          for (int i = 0; i < 128; ++i) acc += whh[r * 128 + i] * hh[i];
          z[r] = acc;
        }
        for (int u = 0; u < 128; ++u) {
          const double ig = sigmoid(z[u]), fg = sigmoid(z[128 + u]);
          const double gg = std::tanh(z[256 + u]), og = sigmoid(z[384 + u]);
          cc[u] = fg * cc[u] + ig * gg;
          hh[u] = og * std::tanh(cc[u]);
          out[t * 256 + d * 128 + u] = hh[u];
        }
      }
    }
    seq = out;
    in = 256;
  }
  // 12–15. Linears, classifier, log-softmax.
  auto linear = [&](const std::vector<double>& xin, int fin,
                    const std::string& name, int fout, bool leaky) {
    auto w = D(f, name + ".weight"), b = D(f, name + ".bias");
    std::vector<double> y(T * fout);
    for (int t = 0; t < T; ++t) {
      for (int o = 0; o < fout; ++o) {
        double s = b[o];
        for (int i = 0; i < fin; ++i) s += w[o * fin + i] * xin[t * fin + i];
        y[t * fout + o] = leaky && s < 0 ? 0.01 * s : s;
      }
    }
    return y;
  };
  auto l0o = linear(seq, 256, "linear.0", 128, true);
  auto l1o = linear(l0o, 128, "linear.1", 128, true);
  auto logits = linear(l1o, 128, "classifier", 7, false);
  for (int t = 0; t < T; ++t) {
    double mx = -1e300, sum = 0;
    for (int c = 0; c < 7; ++c) mx = std::max(mx, logits[t * 7 + c]);
    for (int c = 0; c < 7; ++c) sum += std::exp(logits[t * 7 + c] - mx);
    for (int c = 0; c < 7; ++c)
      logits[t * 7 + c] = logits[t * 7 + c] - mx - std::log(sum);
  }
  return logits;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name);
}

class CpuSegmentationModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = TempPath("pyannet_random.safetensors");
    ASSERT_TRUE(testing::WriteRandomPyanNet(path, 1234).ok());
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = std::move(*file);
    auto model = CpuSegmentationModel::Create(*file_, {.threads = 2});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    wav_ = testing::ReadWavOrDie("pyannote-audio/sample/sample.wav");
  }
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<CpuSegmentationModel> model_;
  std::vector<float> wav_;
};

TEST_F(CpuSegmentationModelTest, MatchesFloat64ReferenceOnSpeech) {
  // Two windows in one batch: 0–10 s and 12–22 s.
  const int starts[2] = {0, 192000};
  std::vector<float> windows(2 * kWindowSamples);
  for (int i = 0; i < 2; ++i) {
    std::copy(wav_.begin() + starts[i],
              wav_.begin() + starts[i] + kWindowSamples,
              windows.begin() + i * kWindowSamples);
  }
  std::vector<float> out(2 * kSegmentationFrames * kPowersetClasses);
  ASSERT_TRUE(model_->Run(windows, 2, out).ok());
  for (int i = 0; i < 2; ++i) {
    auto ref = ReferencePyanNet(*file_, windows.data() + i * kWindowSamples);
    double max_abs = 0;
    for (int j = 0; j < kSegmentationFrames * kPowersetClasses; ++j) {
      max_abs = std::max(
          max_abs, std::abs(out[i * kSegmentationFrames * 7 + j] - ref[j]));
    }
    std::cerr << "segmentation vs float64 reference, window " << i
              << ": max abs " << max_abs << "\n";
    // float32 through SincNet, 4 BiLSTM layers over 589 steps and 3 linears.
    EXPECT_LT(max_abs, 1e-4);
  }
}

TEST_F(CpuSegmentationModelTest, BatchedEqualsOneByOne) {
  std::vector<float> windows(3 * kWindowSamples);
  std::copy(wav_.begin(), wav_.begin() + 3 * kWindowSamples, windows.begin());
  std::vector<float> batched(3 * kSegmentationFrames * 7);
  ASSERT_TRUE(model_->Run(windows, 3, batched).ok());
  for (int i = 0; i < 3; ++i) {
    std::vector<float> one(kSegmentationFrames * 7);
    ASSERT_TRUE(model_
                    ->Run(std::span<const float>(windows).subspan(
                              i * kWindowSamples, kWindowSamples),
                          1, one)
                    .ok());
    for (int j = 0; j < kSegmentationFrames * 7; ++j) {
      ASSERT_NEAR(one[j], batched[i * kSegmentationFrames * 7 + j], 1e-5)
          << i << " " << j;
    }
  }
}

TEST_F(CpuSegmentationModelTest, RejectsBadShapes) {
  std::vector<float> windows(kWindowSamples), out(kSegmentationFrames * 7);
  EXPECT_EQ(model_->Run(windows, 2, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model_->Run(windows, 0, out).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> small(10);
  EXPECT_EQ(model_->Run(windows, 1, small).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CpuSegmentationModelCreateTest, MissingTensorIsNotFound) {
  const std::string path = TempPath("empty.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {}, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto model = CpuSegmentationModel::Create(**file, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace diarization::models
