#include "engine/pipeline/pdist_direct.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace diarization::pipeline {
namespace {

constexpr int kLanes = 16;  // pairs per step: four AVX2 vectors of 4

// Columns [jb, jb + 16) of the transposed rows (`xt`: d × npad, zero
// padded) against every row i before them: 16 pairs per (i, block), each
// lane summing its pair's squared differences in coordinate order.
__attribute__((target("avx2"))) void PdistDirectAvx2(const double* xd,
                                                     const double* xt, int n,
                                                     int npad, int d,
                                                     double* out) {
  alignas(32) double r[kLanes];
  for (int jb = 0; jb < npad; jb += kLanes) {
    const int i_end = std::min(n - 1, jb + kLanes - 1);
    for (int i = 0; i < i_end; ++i) {
      const double* xi = xd + static_cast<size_t>(i) * d;
      const double* col = xt + jb;
      __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
      __m256d s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
      for (int t = 0; t < d; ++t, col += npad) {
        const __m256d a = _mm256_set1_pd(xi[t]);
        const __m256d d0 = _mm256_sub_pd(a, _mm256_loadu_pd(col));
        const __m256d d1 = _mm256_sub_pd(a, _mm256_loadu_pd(col + 4));
        const __m256d d2 = _mm256_sub_pd(a, _mm256_loadu_pd(col + 8));
        const __m256d d3 = _mm256_sub_pd(a, _mm256_loadu_pd(col + 12));
        s0 = _mm256_add_pd(s0, _mm256_mul_pd(d0, d0));
        s1 = _mm256_add_pd(s1, _mm256_mul_pd(d1, d1));
        s2 = _mm256_add_pd(s2, _mm256_mul_pd(d2, d2));
        s3 = _mm256_add_pd(s3, _mm256_mul_pd(d3, d3));
      }
      // IEEE square roots, as std::sqrt.
      _mm256_store_pd(r, _mm256_sqrt_pd(s0));
      _mm256_store_pd(r + 4, _mm256_sqrt_pd(s1));
      _mm256_store_pd(r + 8, _mm256_sqrt_pd(s2));
      _mm256_store_pd(r + 12, _mm256_sqrt_pd(s3));
      const int j_begin = std::max(jb, i + 1), j_end = std::min(n, jb + kLanes);
      // Pair (i, j) sits at n·i − i(i+1)/2 + j − i − 1.
      double* row = out + (static_cast<ptrdiff_t>(n) * i -
                           static_cast<ptrdiff_t>(i) * (i + 1) / 2 - i - 1);
      for (int j = j_begin; j < j_end; ++j) row[j] = r[j - jb];
    }
  }
}

}  // namespace

void PdistDirectScalar(std::span<const float> x, int n, int d,
                       std::span<double> out) {
  size_t k = 0;
  for (int i = 0; i < n; ++i) {
    const float* xi = x.data() + static_cast<size_t>(i) * d;
    for (int j = i + 1; j < n; ++j) {
      const float* xj = x.data() + static_cast<size_t>(j) * d;
      double s = 0.0;
      for (int t = 0; t < d; ++t) {
        const double diff =
            static_cast<double>(xi[t]) - static_cast<double>(xj[t]);
        s += diff * diff;
      }
      out[k++] = std::sqrt(s);
    }
  }
}

void PdistDirect(std::span<const float> x, int n, int d,
                 std::span<double> out) {
  if (n < 2) return;
  if (!__builtin_cpu_supports("avx2")) {
    PdistDirectScalar(x, n, d, out);
    return;
  }
  const int npad = (n + kLanes - 1) / kLanes * kLanes;
  std::vector<double> xd(x.begin(), x.begin() + static_cast<size_t>(n) * d);
  // The rows transposed (d × npad, zero padded): a lane's coordinate t of
  // 16 consecutive rows is one contiguous load.
  std::vector<double> xt(static_cast<size_t>(d) * npad, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < d; ++t) {
      xt[static_cast<size_t>(t) * npad + i] =
          xd[static_cast<size_t>(i) * d + t];
    }
  }
  PdistDirectAvx2(xd.data(), xt.data(), n, npad, d, out.data());
}

}  // namespace diarization::pipeline
