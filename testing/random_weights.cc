#include "testing/random_weights.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/format/safetensors.h"

namespace diarization::testing {
namespace {

using models::DType;
using models::TensorData;
using models::WriteSafetensors;

class Builder {
 public:
  explicit Builder(uint32_t seed) : rng_(seed) {}

  void Add(const std::string& name, std::vector<int64_t> shape,
           const std::vector<float>& values) {
    TensorData t;
    t.spec = {name, DType::kF32, std::move(shape)};
    t.bytes.resize(values.size() * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    tensors_.push_back(std::move(t));
  }
  void Uniform(const std::string& name, std::vector<int64_t> shape, float lo,
               float hi) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    Add(name, std::move(shape), v);
  }
  void AddI64Scalar(const std::string& name, int64_t value) {
    TensorData t;
    t.spec = {name, DType::kI64, {}};
    t.bytes.resize(sizeof(int64_t));
    std::memcpy(t.bytes.data(), &value, sizeof(value));
    tensors_.push_back(std::move(t));
  }
  absl::Status Write(const std::string& path) {
    return WriteSafetensors(path, tensors_, {{"format", "pt"}});
  }

 private:
  std::mt19937 rng_;
  std::vector<TensorData> tensors_;
};

}  // namespace

absl::Status WriteRandomPyanNet(const std::string& path, uint32_t seed) {
  Builder b(seed);
  b.Uniform("sincnet.wav_norm1d.weight", {1}, 0.8f, 1.2f);
  b.Uniform("sincnet.wav_norm1d.bias", {1}, -0.1f, 0.1f);
  // asteroid's initialisation: mel-spaced bands between 30 Hz and
  // 8000 − 100 Hz, plus noise so that the filters are not the defaults.
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700.0); };
  auto to_hz = [](double mel) { return 700 * (std::pow(10, mel / 2595) - 1); };
  std::vector<float> low(40), band(40);
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> jitter(-5.0f, 5.0f);
  for (int k = 0; k < 40; ++k) {
    double m0 = to_mel(30) + (to_mel(7900) - to_mel(30)) * k / 40.0;
    double m1 = to_mel(30) + (to_mel(7900) - to_mel(30)) * (k + 1) / 40.0;
    low[k] = static_cast<float>(to_hz(m0)) + jitter(rng);
    band[k] = static_cast<float>(to_hz(m1) - to_hz(m0)) + jitter(rng);
  }
  b.Add("sincnet.conv1d.0.filterbank.low_hz_", {40, 1}, low);
  b.Add("sincnet.conv1d.0.filterbank.band_hz_", {40, 1}, band);
  std::vector<float> window(125), n(125);
  for (int j = 0; j < 125; ++j) {
    // asteroid: 0.54 − 0.46·cos(2π·n_lin/251) over linspace(0, 124, 125)
    // and n_ = 2π·(−125..−1)/16000, computed in float32.
    window[j] =
        0.54f - 0.46f * std::cos(2.0f * static_cast<float>(std::numbers::pi) *
                                 static_cast<float>(j) / 251.0f);
    n[j] = 2.0f * static_cast<float>(std::numbers::pi) *
           static_cast<float>(j - 125) / 16000.0f;
  }
  b.Add("sincnet.conv1d.0.filterbank.window_", {125}, window);
  b.Add("sincnet.conv1d.0.filterbank.n_", {1, 125}, n);
  const float k1 = 1.0f / std::sqrt(80.0f * 5),
              k2 = 1.0f / std::sqrt(60.0f * 5);
  b.Uniform("sincnet.conv1d.1.weight", {60, 80, 5}, -k1, k1);
  b.Uniform("sincnet.conv1d.1.bias", {60}, -k1, k1);
  b.Uniform("sincnet.conv1d.2.weight", {60, 60, 5}, -k2, k2);
  b.Uniform("sincnet.conv1d.2.bias", {60}, -k2, k2);
  const int nc[3] = {80, 60, 60};
  for (int i = 0; i < 3; ++i) {
    b.Uniform(absl::StrCat("sincnet.norm1d.", i, ".weight"), {nc[i]}, 0.8f,
              1.2f);
    b.Uniform(absl::StrCat("sincnet.norm1d.", i, ".bias"), {nc[i]}, -0.1f,
              0.1f);
  }
  const float kl = 1.0f / std::sqrt(128.0f);
  for (int layer = 0; layer < 4; ++layer) {
    const int in = layer == 0 ? 60 : 256;
    for (const char* s : {"", "_reverse"}) {
      const std::string suffix = absl::StrCat("_l", layer, s);
      b.Uniform("lstm.weight_ih" + suffix, {512, in}, -kl, kl);
      b.Uniform("lstm.weight_hh" + suffix, {512, 128}, -kl, kl);
      b.Uniform("lstm.bias_ih" + suffix, {512}, -kl, kl);
      b.Uniform("lstm.bias_hh" + suffix, {512}, -kl, kl);
    }
  }
  const float a0 = 1.0f / 16.0f, a1 = 1.0f / std::sqrt(128.0f);
  b.Uniform("linear.0.weight", {128, 256}, -a0, a0);
  b.Uniform("linear.0.bias", {128}, -a0, a0);
  b.Uniform("linear.1.weight", {128, 128}, -a1, a1);
  b.Uniform("linear.1.bias", {128}, -a1, a1);
  b.Uniform("classifier.weight", {7, 128}, -a1, a1);
  b.Uniform("classifier.bias", {7}, -a1, a1);
  return b.Write(path);
}

absl::Status WriteRandomResNet34(const std::string& path, uint32_t seed) {
  Builder b(seed);
  auto bn = [&](const std::string& p, int c) {
    b.Uniform(p + ".weight", {c}, 0.8f, 1.2f);
    b.Uniform(p + ".bias", {c}, -0.1f, 0.1f);
    b.Uniform(p + ".running_mean", {c}, -0.1f, 0.1f);
    b.Uniform(p + ".running_var", {c}, 0.5f, 1.5f);
    b.AddI64Scalar(p + ".num_batches_tracked", 1000);
  };
  // Kaiming-uniform-like bound √(6/fan_in) keeps ReLU activations O(1).
  auto conv = [&](const std::string& name, int out, int in, int k) {
    const float bound = std::sqrt(6.0f / (in * k * k));
    b.Uniform(name, {out, in, k, k}, -bound, bound);
  };
  conv("resnet.conv1.weight", 32, 1, 3);
  bn("resnet.bn1", 32);
  const int blocks[4] = {3, 4, 6, 3};
  const int channels[4] = {32, 64, 128, 256};
  int in_planes = 32;
  for (int layer = 0; layer < 4; ++layer) {
    const int planes = channels[layer];
    for (int blk = 0; blk < blocks[layer]; ++blk) {
      const std::string p = absl::StrCat("resnet.layer", layer + 1, ".", blk);
      conv(p + ".conv1.weight", planes, in_planes, 3);
      bn(p + ".bn1", planes);
      // Residual branches scaled down so 16 blocks do not blow up.
      const float bound = 0.5f * std::sqrt(6.0f / (planes * 9));
      b.Uniform(p + ".conv2.weight", {planes, planes, 3, 3}, -bound, bound);
      bn(p + ".bn2", planes);
      if (blk == 0 && layer > 0) {
        conv(p + ".shortcut.0.weight", planes, in_planes, 1);
        bn(p + ".shortcut.1", planes);
      }
      in_planes = planes;
    }
  }
  const float s = 1.0f / std::sqrt(5120.0f);
  b.Uniform("resnet.seg_1.weight", {256, 5120}, -s, s);
  b.Uniform("resnet.seg_1.bias", {256}, -s, s);
  return b.Write(path);
}

}  // namespace diarization::testing
