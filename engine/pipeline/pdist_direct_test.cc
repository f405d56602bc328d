#include "engine/pipeline/pdist_direct.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

// Fresh random rows with near-duplicates, zeros and a wide dynamic range.
std::vector<float> HardRows(int n, int d, std::mt19937& rng) {
  std::normal_distribution<float> g;
  std::uniform_real_distribution<float> scale(-6.0f, 6.0f);
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
  return x;
}

std::vector<PdistPath> SupportedPaths() {
  std::vector<PdistPath> paths;
  for (PdistPath p : {PdistPath::kBest, PdistPath::kScalar, PdistPath::kAvx2,
                      PdistPath::kAvx512}) {
    if (PdistPathSupported(p)) paths.push_back(p);
  }
  return paths;
}

// Every path the CPU runs gives the plain loop's bits (the loop is scipy's:
// each pair's squared differences summed in coordinate order), on one
// thread and split over several: sizes around the 16- and 32-pair blocks,
// the 16-row tiles and beyond 1024 points, coordinate counts that are not
// multiples of the vector width or of the 64-coordinate chunks.
TEST(PdistDirectTest, EveryPathAndSplitGivesTheLoopsBits) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<PdistPath> paths = SupportedPaths();
  std::printf("%zu paths on this CPU (AVX2 %d, AVX-512F %d)\n", paths.size(),
              PdistPathSupported(PdistPath::kAvx2),
              PdistPathSupported(PdistPath::kAvx512));
  std::uniform_int_distribution<int> big(1025, 1700);
  for (const int n : {2, 3, 15, 16, 17, 31, 33, 250, 1023, big(rng)}) {
    for (const int d : {1, 5, 64, 65, 256}) {
      if (n > 300 && d != 256) continue;  // the large sizes at the real d
      const std::vector<float> x = HardRows(n, d, rng);
      const size_t pairs = static_cast<size_t>(n) * (n - 1) / 2;
      std::vector<double> want(pairs, NAN);
      PdistDirectScalar(x, n, d, want);
      for (const PdistPath path : paths) {
        for (const int threads : {1, 3}) {
          std::vector<double> got(pairs, NAN);
          PdistDirect(x, n, d, got, threads, path);
          ASSERT_EQ(
              std::memcmp(want.data(), got.data(), pairs * sizeof(double)), 0)
              << "n " << n << " d " << d << " path " << static_cast<int>(path)
              << " threads " << threads;
        }
      }
    }
  }
}

// The square form: the same bits in the upper triangle, zeros on the
// diagonal, the lower triangle untouched.
TEST(PdistDirectTest, SquareFormHoldsTheSameBitsAboveTheDiagonal) {
  std::mt19937 rng(std::random_device{}());
  for (const int n : {1, 2, 40, 1100}) {
    const int d = 256;
    const std::vector<float> x = HardRows(n, d, rng);
    std::vector<double> want(static_cast<size_t>(n) * (n - 1) / 2);
    PdistDirectScalar(x, n, d, want);
    for (const PdistPath path : SupportedPaths()) {
      std::vector<double> m(static_cast<size_t>(n) * n, -1.0);
      PdistDirectSquare(x, n, d, m, /*threads=*/2, path);
      size_t k = 0;
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const double v = m[static_cast<size_t>(i) * n + j];
          if (j < i) {
            ASSERT_EQ(v, -1.0) << "lower (" << i << ", " << j << ")";
          } else if (j == i) {
            ASSERT_EQ(v, 0.0) << "diagonal " << i;
          } else {
            ASSERT_EQ(std::memcmp(&v, &want[k++], 8), 0)
                << "n " << n << " (" << i << ", " << j << ") path "
                << static_cast<int>(path);
          }
        }
      }
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
