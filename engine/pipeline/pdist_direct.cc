#include "engine/pipeline/pdist_direct.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "engine/common/parallel_ranges.h"

namespace diarization::pipeline {
namespace {

// Rows per tile and coordinates per chunk: a block's chunk of transposed
// columns (lanes × 64 doubles: 8 or 16 KiB) stays in L1 while the tile's
// rows run over it; the partial sums wait in `acc` between chunks (a stored
// double is exact, so chunking changes no bit).
constexpr int kTileRows = 16;
constexpr int kChunk = 64;
// Rows per thread below which a split is not worth its thread.
constexpr int kMinRowsPerThread = 128;

// The rows as float64 (n × d) and transposed (d × npad, zero padded to a
// whole block past n): a lane's coordinate t of consecutive rows is one
// contiguous load.
struct Prepared {
  int n = 0, d = 0, npad = 0;
  std::vector<double> xd, xt;
};

Prepared Prepare(std::span<const float> x, int n, int d, int lanes,
                 int threads) {
  Prepared p;
  p.n = n;
  p.d = d;
  p.npad = (n + lanes - 1) / lanes * lanes + lanes;
  p.xd.assign(x.begin(), x.begin() + static_cast<size_t>(n) * d);
  p.xt.assign(static_cast<size_t>(d) * p.npad, 0.0);
  ForEvenRanges(n, threads, 512, [&](int begin, int end) {
    for (int i0 = begin; i0 < end; i0 += 32) {
      const int i1 = std::min(end, i0 + 32);
      for (int t = 0; t < d; ++t) {
        double* col = p.xt.data() + static_cast<size_t>(t) * p.npad;
        for (int i = i0; i < i1; ++i) {
          col[i] = p.xd[static_cast<size_t>(i) * d + t];
        }
      }
    }
  });
  return p;
}

// acc[l] (+)= Σ_{t0 <= t < t1} (xi[t] − col_t[l])², t ascending, for the
// `Lanes` columns starting at `cols` (row stride npad); from zero when
// t0 == 0. One definition per instruction set, each the same operations.
template <int Lanes>
void StepPortable(const double* xi, const double* cols, int npad, int t0,
                  int t1, double* acc) {
  double s[Lanes];
  for (int l = 0; l < Lanes; ++l) s[l] = t0 == 0 ? 0.0 : acc[l];
  const double* col = cols + static_cast<size_t>(t0) * npad;
  for (int t = t0; t < t1; ++t, col += npad) {
    for (int l = 0; l < Lanes; ++l) {
      const double diff = xi[t] - col[l];
      s[l] += diff * diff;
    }
  }
  for (int l = 0; l < Lanes; ++l) acc[l] = s[l];
}

__attribute__((target("avx2"))) void StepAvx2(const double* xi,
                                              const double* cols, int npad,
                                              int t0, int t1, double* acc) {
  __m256d s0, s1, s2, s3;
  if (t0 == 0) {
    s0 = s1 = s2 = s3 = _mm256_setzero_pd();
  } else {
    s0 = _mm256_load_pd(acc);
    s1 = _mm256_load_pd(acc + 4);
    s2 = _mm256_load_pd(acc + 8);
    s3 = _mm256_load_pd(acc + 12);
  }
  const double* col = cols + static_cast<size_t>(t0) * npad;
  for (int t = t0; t < t1; ++t, col += npad) {
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
  _mm256_store_pd(acc, s0);
  _mm256_store_pd(acc + 4, s1);
  _mm256_store_pd(acc + 8, s2);
  _mm256_store_pd(acc + 12, s3);
}

__attribute__((target("avx512f"))) void StepAvx512(const double* xi,
                                                   const double* cols, int npad,
                                                   int t0, int t1,
                                                   double* acc) {
  __m512d s0, s1, s2, s3;
  if (t0 == 0) {
    s0 = s1 = s2 = s3 = _mm512_setzero_pd();
  } else {
    s0 = _mm512_load_pd(acc);
    s1 = _mm512_load_pd(acc + 8);
    s2 = _mm512_load_pd(acc + 16);
    s3 = _mm512_load_pd(acc + 24);
  }
  const double* col = cols + static_cast<size_t>(t0) * npad;
  for (int t = t0; t < t1; ++t, col += npad) {
    const __m512d a = _mm512_set1_pd(xi[t]);
    const __m512d d0 = _mm512_sub_pd(a, _mm512_loadu_pd(col));
    const __m512d d1 = _mm512_sub_pd(a, _mm512_loadu_pd(col + 8));
    const __m512d d2 = _mm512_sub_pd(a, _mm512_loadu_pd(col + 16));
    const __m512d d3 = _mm512_sub_pd(a, _mm512_loadu_pd(col + 24));
    s0 = _mm512_add_pd(s0, _mm512_mul_pd(d0, d0));
    s1 = _mm512_add_pd(s1, _mm512_mul_pd(d1, d1));
    s2 = _mm512_add_pd(s2, _mm512_mul_pd(d2, d2));
    s3 = _mm512_add_pd(s3, _mm512_mul_pd(d3, d3));
  }
  _mm512_store_pd(acc, s0);
  _mm512_store_pd(acc + 8, s1);
  _mm512_store_pd(acc + 16, s2);
  _mm512_store_pd(acc + 24, s3);
}

using StepFn = void (*)(const double*, const double*, int, int, int, double*);

// Where pair (i, j), j > i, goes: `base` + RowOffset(i) + j.
struct Output {
  double* base = nullptr;
  bool condensed = false;
  int n = 0;
  ptrdiff_t RowOffset(int i) const {
    if (!condensed) return static_cast<ptrdiff_t>(i) * n;
    return static_cast<ptrdiff_t>(n) * i -
           static_cast<ptrdiff_t>(i) * (i + 1) / 2 - i - 1;
  }
};

// Rows [begin, end): every pair (i, j > i), in blocks of `Lanes` columns
// aligned to the block grid (a block straddling the diagonal computes a
// few pairs it does not store).
template <int Lanes>
void Rows(const Prepared& p, StepFn step, const Output& out, int begin,
          int end) {
  alignas(64) double acc[kTileRows][Lanes];
  for (int i0 = begin; i0 < end; i0 += kTileRows) {
    const int i1 = std::min(end, i0 + kTileRows);
    for (int jb = (i0 + 1) / Lanes * Lanes; jb < p.n; jb += Lanes) {
      const double* cols = p.xt.data() + jb;
      for (int t0 = 0; t0 < p.d; t0 += kChunk) {
        const int t1 = std::min(p.d, t0 + kChunk);
        for (int i = i0; i < i1; ++i) {
          if (jb + Lanes <= i + 1) continue;  // the block is left of row i's
          step(p.xd.data() + static_cast<size_t>(i) * p.d, cols, p.npad, t0, t1,
               acc[i - i0]);
        }
      }
      const int j_end = std::min(p.n, jb + Lanes);
      for (int i = i0; i < i1; ++i) {
        double* row = out.base + out.RowOffset(i);
        for (int j = std::max(jb, i + 1); j < j_end; ++j) {
          row[j] = std::sqrt(acc[i - i0][j - jb]);  // IEEE, as scipy's
        }
      }
    }
  }
}

PdistPath Resolve(PdistPath path) {
  if (path != PdistPath::kBest) return path;
  if (PdistPathSupported(PdistPath::kAvx512)) return PdistPath::kAvx512;
  if (PdistPathSupported(PdistPath::kAvx2)) return PdistPath::kAvx2;
  return PdistPath::kScalar;
}

void Run(std::span<const float> x, int n, int d, const Output& out, int threads,
         PdistPath path) {
  path = Resolve(path);
  const int lanes = path == PdistPath::kAvx512 ? 32 : 16;
  const Prepared p = Prepare(x, n, d, lanes, threads);
  ForUpperTriangleRows(n, threads, kMinRowsPerThread, [&](int b, int e) {
    switch (path) {
      case PdistPath::kAvx512:
        Rows<32>(p, StepAvx512, out, b, e);
        break;
      case PdistPath::kAvx2:
        Rows<16>(p, StepAvx2, out, b, e);
        break;
      default:
        Rows<16>(p, StepPortable<16>, out, b, e);
        break;
    }
  });
}

}  // namespace

bool PdistPathSupported(PdistPath path) {
  switch (path) {
    case PdistPath::kAvx2:
      return __builtin_cpu_supports("avx2");
    case PdistPath::kAvx512:
      return __builtin_cpu_supports("avx512f");
    default:
      return true;
  }
}

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

void PdistDirect(std::span<const float> x, int n, int d, std::span<double> out,
                 int threads, PdistPath path) {
  if (n < 2) return;
  Run(x, n, d, {.base = out.data(), .condensed = true, .n = n}, threads, path);
}

void PdistDirectSquare(std::span<const float> x, int n, int d,
                       std::span<double> out, int threads, PdistPath path) {
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i) * n + i] = 0.0;
  if (n < 2) return;
  Run(x, n, d, {.base = out.data(), .condensed = false, .n = n}, threads, path);
}

}  // namespace diarization::pipeline
