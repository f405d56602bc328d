#include "testing/reference_networks.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>

#include "absl/strings/str_cat.h"

namespace diarization::testing {

using models::SafetensorsFile;
using models::TensorView;

namespace {

std::vector<double> D(const SafetensorsFile& f, const std::string& name) {
  const TensorView* t = f.Find(name);
  if (t == nullptr) std::abort();  // the caller validated the file
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

}  // namespace

std::vector<double> ReferenceFbank(std::span<const float> x,
                                   FbankTimeDomain mode,
                                   std::span<const float> window32) {
  const bool f32 = mode == FbankTimeDomain::kTorchFloat32;
  const int n = static_cast<int>(x.size());
  const int frames = 1 + (n - 400) / 160;
  auto mel = [](double f) { return 1127.0 * std::log(1.0 + f / 700.0); };
  const double ml = mel(20.0), mh = mel(8000.0), d = (mh - ml) / 81.0;
  std::vector<double> banks(80 * 256);
  for (int b = 0; b < 80; ++b) {
    for (int i = 0; i < 256; ++i) {
      if (f32) {
        // torchaudio builds the triangles from float32 tensors; their edges
        // (small weights) carry float rounding that is part of its output.
        const float m = 1127.0f * std::log(1.0f + (31.25f * i) / 700.0f);
        const float l = float(ml) + float(b) * float(d);
        const float c = float(ml) + float(b + 1) * float(d);
        const float r = float(ml) + float(b + 2) * float(d);
        banks[b * 256 + i] =
            std::max(0.0f, std::min((m - l) / (c - l), (r - m) / (r - c)));
      } else {
        const double m = mel(31.25 * i);
        const double l = ml + b * d, c = ml + (b + 1) * d, r = ml + (b + 2) * d;
        banks[b * 256 + i] =
            std::max(0.0, std::min((m - l) / (c - l), (r - m) / (r - c)));
      }
    }
  }
  std::vector<double> cosines(512), sines(512);
  for (int j = 0; j < 512; ++j) {
    cosines[j] = std::cos(2.0 * std::numbers::pi * j / 512.0);
    sines[j] = std::sin(2.0 * std::numbers::pi * j / 512.0);
  }
  std::vector<double> out(frames * 80);
  for (int m = 0; m < frames; ++m) {
    double y[400];
    if (f32) {
      float f[400];
      double sum = 0.0;
      for (int j = 0; j < 400; ++j) {
        f[j] = x[160 * m + j] * 32768.0f;
        sum += f[j];
      }
      const float mean = static_cast<float>(sum / 400.0);
      for (float& v : f) v = v - mean;
      for (int j = 0; j < 400; ++j) {
        const float emphasised = f[j] - 0.97f * f[j > 0 ? j - 1 : 0];
        y[j] = emphasised * window32[j];
      }
    } else {
      double f[400];
      double sum = 0.0;
      for (int j = 0; j < 400; ++j) {
        f[j] = static_cast<double>(x[160 * m + j]) * 32768.0;
        sum += f[j];
      }
      for (double& v : f) v -= sum / 400.0;
      for (int j = 0; j < 400; ++j) {
        y[j] = (f[j] - 0.97 * f[j > 0 ? j - 1 : 0]) *
               (0.54 - 0.46 * std::cos(2.0 * std::numbers::pi * j / 399.0));
      }
    }
    double power[256];
    for (int k = 0; k < 256; ++k) {
      double re = 0.0, im = 0.0;
      for (int j = 0; j < 400; ++j) {
        re += y[j] * cosines[(j * k) % 512];
        im -= y[j] * sines[(j * k) % 512];
      }
      power[k] = re * re + im * im;
    }
    for (int b = 0; b < 80; ++b) {
      double e = 0.0;
      for (int k = 0; k < 256; ++k) e += power[k] * banks[b * 256 + k];
      out[m * 80 + b] = std::log(std::max(e, 1.1920928955078125e-07));
    }
  }
  for (int b = 0; b < 80; ++b) {
    double mean = 0.0;
    for (int m = 0; m < frames; ++m) mean += out[m * 80 + b];
    mean /= frames;
    for (int m = 0; m < frames; ++m) out[m * 80 + b] -= mean;
  }
  return out;
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

}  // namespace diarization::testing
