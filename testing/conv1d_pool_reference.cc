#include "testing/conv1d_pool_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace diarization::testing {

Conv1dPoolReference Conv1dMaxPool3Reference(std::span<const float> x,
                                            std::span<const float> weights,
                                            std::span<const float> bias,
                                            int batch, int in_channels,
                                            int out_channels, int len,
                                            int taps) {
  const int pooled = len >= taps ? (len - taps + 1) / 3 : 0;
  Conv1dPoolReference r;
  r.y.resize(size_t(batch) * out_channels * pooled);
  r.scale.resize(r.y.size());
  for (int b = 0; b < batch; ++b) {
    for (int o = 0; o < out_channels; ++o) {
      for (int p = 0; p < pooled; ++p) {
        double best = -std::numeric_limits<double>::infinity(), scale = 0;
        for (int r3 = 0; r3 < 3; ++r3) {
          const int t = 3 * p + r3;
          double acc = 0, abs_sum = 0;
          for (int c = 0; c < in_channels; ++c) {
            for (int k = 0; k < taps; ++k) {
              const double term =
                  double(weights[(size_t(o) * in_channels + c) * taps + k]) *
                  x[(size_t(b) * in_channels + c) * len + t + k];
              acc += term;
              abs_sum += std::abs(term);
            }
          }
          best = std::max(best, acc);
          scale = std::max(scale, abs_sum);
        }
        const size_t i = (size_t(b) * out_channels + o) * pooled + p;
        r.y[i] = best + bias[o];
        r.scale[i] = scale;
      }
    }
  }
  return r;
}

Conv1dPoolCase MakeConv1dPoolCase(int batch, int in_channels, int len,
                                  std::mt19937& rng) {
  constexpr int kOut = 60, kTaps = 5;
  Conv1dPoolCase c{.batch = batch, .in_channels = in_channels, .len = len};
  std::normal_distribution<float> g(0.0f, 1.0f);
  c.x.resize(size_t(batch) * in_channels * len);
  c.weights.resize(size_t(kOut) * in_channels * kTaps);
  c.bias.resize(kOut);
  for (float& v : c.x) v = g(rng);
  const float w_scale = 1.0f / std::sqrt(float(in_channels * kTaps));
  for (float& v : c.weights) v = w_scale * g(rng);
  for (float& v : c.bias) v = 0.3f * g(rng);
  c.want = Conv1dMaxPool3Reference(c.x, c.weights, c.bias, batch, in_channels,
                                   kOut, len, kTaps);
  return c;
}

double ExpectConv1dPoolMatches(std::span<const float> got,
                               const Conv1dPoolCase& c) {
  constexpr int kTaps = 5;
  EXPECT_EQ(got.size(), c.want.y.size());
  double max_rel = 0;
  for (size_t i = 0; i < std::min(got.size(), c.want.y.size()); ++i) {
    if (!std::isfinite(got[i])) {
      ADD_FAILURE() << "output " << i << " not written";
      return max_rel;
    }
    // A float32 FMA chain of in_channels x 5 terms: its error is bounded by
    // n·2⁻²⁴ of the terms' absolute sum; the max and the bias add one
    // rounding of the result. A wrong index costs the terms' own size.
    const double err = std::abs(got[i] - c.want.y[i]);
    const double bound = c.in_channels * kTaps * 6e-8 * c.want.scale[i] +
                         1e-7 * std::abs(c.want.y[i]);
    if (!(err <= bound)) {
      ADD_FAILURE() << "output " << i << " of " << got.size() << ": got "
                    << got[i] << ", want " << c.want.y[i];
      return max_rel;
    }
    max_rel = std::max(max_rel, err / (c.want.scale[i] + 1e-30));
  }
  return max_rel;
}

}  // namespace diarization::testing
