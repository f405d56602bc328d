#include "engine/pipeline/pdist_direct.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

// The vector path gives the plain loop's bits (the loop is scipy's: each
// pair's squared differences summed in coordinate order) for fresh random
// rows: sizes around the 16-pair blocks and the 1024-point limit,
// coordinate counts that are not multiples of the vector width, rows with
// near-duplicates, zeros and a wide dynamic range.
TEST(PdistDirectTest, VectorPathGivesTheLoopsBits) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  std::uniform_real_distribution<float> scale(-6.0f, 6.0f);
  for (const int n : {2, 3, 15, 16, 17, 33, 250, 1023, 1024}) {
    for (const int d : {1, 5, 64, 256}) {
      if (n > 300 && d != 256) continue;  // the large sizes at the real d
      std::vector<float> x(static_cast<size_t>(n) * d);
      for (int i = 0; i < n; ++i) {
        const float s = std::exp(scale(rng));
        for (int t = 0; t < d; ++t) {
          float v = s * g(rng);
          if (i > 0 && i % 7 == 0) {  // a near-duplicate of the row before
            v = x[static_cast<size_t>(i - 1) * d + t] * (1.0f + 1e-7f * g(rng));
          }
          if (i % 11 == 5) v = 0.0f;
          x[static_cast<size_t>(i) * d + t] = v;
        }
      }
      const size_t pairs = static_cast<size_t>(n) * (n - 1) / 2;
      std::vector<double> want(pairs, NAN), got(pairs, NAN);
      PdistDirectScalar(x, n, d, want);
      PdistDirect(x, n, d, got);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), pairs * sizeof(double)), 0)
          << "n " << n << " d " << d;
    }
  }
}

// The loop itself against distances computed independently in long double
// (a check on the reference, not on bits): within float64 rounding.
TEST(PdistDirectTest, LoopIsTheEuclideanDistance) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int n = 40, d = 256;
  std::vector<float> x(static_cast<size_t>(n) * d);
  for (float& v : x) v = g(rng);
  std::vector<double> got(static_cast<size_t>(n) * (n - 1) / 2);
  PdistDirect(x, n, d, got);
  size_t k = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      long double s = 0;
      for (int t = 0; t < d; ++t) {
        const long double diff = static_cast<long double>(x[i * d + t]) -
                                 static_cast<long double>(x[j * d + t]);
        s += diff * diff;
      }
      EXPECT_NEAR(got[k], std::sqrt(static_cast<double>(s)),
                  1e-13 * std::sqrt(static_cast<double>(s)));
      ++k;
    }
  }
}

}  // namespace
}  // namespace diarization::pipeline
