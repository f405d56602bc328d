#include "engine/pipeline/kmeans_numpy_sums.h"

#include <array>

namespace diarization::pipeline {
namespace {
constexpr int64_t kPairwiseBlock = 128;  // numpy's PW_BLOCKSIZE

// einsum's contig_contig_outstride0_two loop with `Lanes` lanes per vector.
template <typename T, int Lanes>
std::array<T, Lanes> EinsumLanes(const T* v, int d) {
  std::array<T, Lanes> acc{};
  int i = 0;
  for (; d - i >= 4 * Lanes; i += 4 * Lanes) {
    for (int block = 3; block >= 0; --block) {  // ab3 first, ab0 last
      for (int l = 0; l < Lanes; ++l) {
        const T x = v[i + block * Lanes + l];
        const T product = x * x;
        acc[l] = product + acc[l];
      }
    }
  }
  for (; i < d; i += Lanes) {  // load_tillz: missing lanes are zero
    for (int l = 0; l < Lanes && i + l < d; ++l) {
      const T product = v[i + l] * v[i + l];
      acc[l] = product + acc[l];
    }
  }
  return acc;
}
}  // namespace

float NumpyPairwiseSum(const float* a, int64_t n) {
  if (n < 8) {
    float res = 0.0f;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= kPairwiseBlock) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    float res =
        ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return NumpyPairwiseSum(a, n2) + NumpyPairwiseSum(a + n2, n - n2);
}

float NumpySquaredNorm(const float* v, int d) {
  const auto acc = EinsumLanes<float, 4>(v, d);
  // _mm_hadd_ps twice: (a0 + a1) + (a2 + a3).
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double NumpySquaredNorm(const double* v, int d) {
  const auto acc = EinsumLanes<double, 2>(v, d);
  return acc[0] + acc[1];
}

}  // namespace diarization::pipeline
