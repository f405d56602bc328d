// Conv3x3Nhwc on filters whose result is known without a convolution: the
// centre tap as identity (y = act(x + bias + residual)) and one corner tap
// as identity (a shift by one pixel, zeros at the border), plus the scale.
#include "testing/conv3x3_reference.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {

constexpr int kC = 4;

std::vector<float> Filter(int dy, int dx) {
  std::vector<float> oihw(kC * kC * 9, 0.0f);
  for (int k = 0; k < kC; ++k) oihw[(k * kC + k) * 9 + dy * 3 + dx] = 1.0f;
  return oihw;
}

TEST(Conv3x3ReferenceTest, CentreTapIdentityAddsBiasResidualAndRelu) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int n = 2, h = 3, w = 5;
  std::vector<float> x(n * h * w * kC), r(x.size()), b(kC);
  for (float& v : x) v = g(rng);
  for (float& v : r) v = g(rng);
  for (float& v : b) v = g(rng);
  const std::vector<double> y =
      Conv3x3Nhwc(x, Filter(1, 1), b, &r, /*relu=*/true, n, h, w, kC);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::max(0.0, double(x[i]) + b[i % kC] + r[i]);
    EXPECT_DOUBLE_EQ(y[i], want) << i;
  }
}

TEST(Conv3x3ReferenceTest, CornerTapShiftsWithZeroPadding) {
  const int n = 1, h = 4, w = 6;
  std::vector<float> x(n * h * w * kC), b(kC, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 40.0f;
  std::vector<double> scale;
  // Tap (0, 0) reads x[i - 1, l - 1].
  const std::vector<double> y =
      Conv3x3Nhwc(x, Filter(0, 0), b, nullptr,
                  /*relu=*/false, n, h, w, kC, &scale);
  for (int i = 0; i < h; ++i)
    for (int l = 0; l < w; ++l)
      for (int k = 0; k < kC; ++k) {
        const size_t o = (size_t(i) * w + l) * kC + k;
        const double want =
            (i == 0 || l == 0) ? 0.0 : x[(size_t(i - 1) * w + l - 1) * kC + k];
        EXPECT_DOUBLE_EQ(y[o], want) << i << " " << l << " " << k;
        EXPECT_DOUBLE_EQ(scale[o], std::abs(want));
      }
}

}  // namespace
}  // namespace diarization::testing
