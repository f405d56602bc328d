#include "testing/stem_conv_reference.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {
constexpr int kC = 32;
}  // namespace

std::vector<double> StemConvReference(std::span<const float> x,
                                      std::span<const float> weights,
                                      std::span<const float> bias, int n, int h,
                                      int w) {
  std::vector<double> y(size_t(n) * h * w * kC);
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j)
        for (int k = 0; k < kC; ++k) {
          double acc = bias[k];
          for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx) {
              const int ii = i + dy - 1, jj = j + dx - 1;
              if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
              acc += double(weights[k * 9 + dy * 3 + dx]) *
                     x[(size_t(b) * h + ii) * w + jj];
            }
          y[((size_t(b) * h + i) * w + j) * kC + k] = std::max(acc, 0.0);
        }
  return y;
}

StemConvCase MakeStemConvCase(int n, int h, int w, std::mt19937& rng) {
  StemConvCase c{.n = n, .h = h, .w = w};
  std::normal_distribution<float> g(0.0f, 1.0f);
  c.x.resize(size_t(n) * h * w);
  c.weights.resize(kC * 9);
  c.bias.resize(kC);
  for (float& v : c.x) v = g(rng);
  for (float& v : c.weights) v = 0.5f * g(rng);
  for (float& v : c.bias) v = 0.3f * g(rng);
  c.want = StemConvReference(c.x, c.weights, c.bias, n, h, w);
  return c;
}

double ExpectStemConvMatches(std::span<const float> got,
                             const StemConvCase& c) {
  EXPECT_EQ(got.size(), c.want.size());
  double max_err = 0;
  size_t zeros = 0;
  const size_t count = std::min(got.size(), c.want.size());
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(got[i])) {
      ADD_FAILURE() << "output " << i << " not written";
      return max_err;
    }
    // Nine float products and sums: a few float roundings of the inputs'
    // scale.
    const double err = std::abs(got[i] - c.want[i]);
    if (!(err <= 1e-5 * (1.0 + std::abs(c.want[i])))) {
      ADD_FAILURE() << "output " << i << ": got " << got[i] << ", want "
                    << c.want[i];
      return max_err;
    }
    max_err = std::max(max_err, err);
    zeros += got[i] == 0.0f;
  }
  // Random signs: the ReLU must have cut some, and not all.
  if (count >= 64) {
    EXPECT_GT(zeros, 0u);
    EXPECT_LT(zeros, count);
  }
  return max_err;
}

}  // namespace diarization::testing
