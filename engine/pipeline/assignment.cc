#include "engine/pipeline/assignment.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/common/parallel_ranges.h"
#include "engine/pipeline/config.h"

namespace diarization::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Below these a split costs more than it saves.
constexpr int kMinRowsPerThread = 2048;
constexpr int kMinWindowsPerThread = 512;

}  // namespace

std::vector<double> WeightedCentroids(std::span<const float> train, int n,
                                      int d, std::span<const double> gamma,
                                      int s, std::span<const double> pi,
                                      double min_prior, int* num_kept) {
  std::vector<int> keep;
  for (int k = 0; k < s; ++k) {
    if (pi[k] > min_prior) keep.push_back(k);
  }
  const int kept = static_cast<int>(keep.size());
  // Wᵀ·train / Σ W, as pyannote (`W.T @ train / W.sum(0).T`), one GEMM.
  std::vector<double> w(static_cast<size_t>(n) * kept);
  std::vector<double> wsum(kept, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < kept; ++j) {
      const double v = gamma[static_cast<size_t>(i) * s + keep[j]];
      w[static_cast<size_t>(i) * kept + j] = v;
      wsum[j] += v;
    }
  }
  const std::vector<double> t(train.begin(),
                              train.begin() + static_cast<size_t>(n) * d);
  std::vector<double> centroids(static_cast<size_t>(kept) * d, 0.0);
  if (kept > 0) {
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kept, d, n, 1.0,
                w.data(), kept, t.data(), d, 0.0, centroids.data(), d);
  }
  for (int j = 0; j < kept; ++j) {
    for (int k = 0; k < d; ++k)
      centroids[static_cast<size_t>(j) * d + k] /= wsum[j];
  }
  if (num_kept != nullptr) *num_kept = kept;
  return centroids;
}

std::vector<double> MeanCentroids(std::span<const float> train, int n, int d,
                                  std::span<const int> labels, int k) {
  // np.mean(train[labels == c], axis=0) on float32 rows: a float32 sum row
  // after row, then a float32 division (the float64 quotient rounded once,
  // the same value); scipy's cdist then reads the float32 centroid.
  std::vector<float> sums(static_cast<size_t>(k) * d, 0.0f);
  std::vector<int> counts(k, 0);
  for (int i = 0; i < n; ++i) {
    const int c = labels[i];
    ++counts[c];
    for (int t = 0; t < d; ++t) {
      sums[static_cast<size_t>(c) * d + t] +=
          train[static_cast<size_t>(i) * d + t];
    }
  }
  std::vector<double> centroids(static_cast<size_t>(k) * d);
  for (int c = 0; c < k; ++c) {
    for (int t = 0; t < d; ++t) {
      // np.mean of an empty cluster is NaN.
      const float mean = static_cast<float>(
          static_cast<double>(sums[static_cast<size_t>(c) * d + t]) /
          counts[c]);
      centroids[static_cast<size_t>(c) * d + t] = mean;
    }
  }
  return centroids;
}

std::vector<double> SoftClusters(std::span<const float> embeddings, int rows,
                                 int d, std::span<const double> centroids,
                                 int k, int threads) {
  std::vector<double> cnorm(k, 0.0);
  for (int j = 0; j < k; ++j) {
    double s = 0.0;
    for (int t = 0; t < d; ++t) {
      const double v = centroids[static_cast<size_t>(j) * d + t];
      s += v * v;
    }
    cnorm[j] = s;
  }
  // u·v for every (row, centroid) through one float64 GEMM (OpenBLAS).
  std::vector<double> e(static_cast<size_t>(rows) * d);
  ForEvenRanges(rows, threads, kMinRowsPerThread, [&](int begin, int end) {
    std::copy(embeddings.begin() + static_cast<size_t>(begin) * d,
              embeddings.begin() + static_cast<size_t>(end) * d,
              e.begin() + static_cast<size_t>(begin) * d);
  });
  std::vector<double> dots(static_cast<size_t>(rows) * k);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d, 1.0,
              e.data(), d, centroids.data(), d, 0.0, dots.data(), k);
  std::vector<double> soft(static_cast<size_t>(rows) * k);
  ForEvenRanges(rows, threads, kMinRowsPerThread, [&](int begin, int end) {
    for (int r = begin; r < end; ++r) {
      const double* er = e.data() + static_cast<size_t>(r) * d;
      double ee = 0.0;
      for (int t = 0; t < d; ++t) ee += er[t] * er[t];
      for (int j = 0; j < k; ++j) {
        // scipy cosine: 1 − u·v / sqrt(‖u‖²‖v‖²), clipped to [0, 2]; NaN
        // stays.
        double dist = 1.0 - dots[static_cast<size_t>(r) * k + j] /
                                std::sqrt(ee * cnorm[j]);
        if (dist < 0.0) dist = 0.0;
        if (dist > 2.0) dist = 2.0;
        soft[static_cast<size_t>(r) * k + j] = 2.0 - dist;
      }
    }
  });
  return soft;
}

std::vector<int> ConstrainedArgmax(std::vector<double>& soft, int num_windows,
                                   int k, const std::vector<bool>& inactive,
                                   int threads) {
  constexpr int S = kLocalSpeakers;
  // const = soft.min() − 1 (NaN when any entry is NaN, as numpy's min).
  double min_all = kInf;
  bool any_nan = false;
  for (double v : soft) {
    if (std::isnan(v)) {
      any_nan = true;
    } else {
      min_all = std::min(min_all, v);
    }
  }
  const double fill =
      any_nan ? std::numeric_limits<double>::quiet_NaN() : min_all - 1.0;
  for (int r = 0; r < num_windows * S; ++r) {
    if (!inactive[r]) continue;
    for (int j = 0; j < k; ++j) soft[static_cast<size_t>(r) * k + j] = fill;
  }
  // constrained_argmax: NaN → nanmin(soft) (min over the finite entries,
  // which now include `fill` when it is finite).
  double nanmin = kInf;
  for (double v : soft) {
    if (!std::isnan(v)) nanmin = std::min(nanmin, v);
  }
  std::vector<double> work(soft);
  for (double& v : work) {
    if (std::isnan(v)) v = nanmin;
  }
  std::vector<int> hard(static_cast<size_t>(num_windows) * S, -2);
  ForEvenRanges(
      num_windows, threads, kMinWindowsPerThread, [&](int begin, int end) {
        for (int c = begin; c < end; ++c) {
          const std::vector<int> col = LinearSumAssignmentMax(
              std::span<const double>(
                  work.data() + static_cast<size_t>(c) * S * k, S * k),
              S, k);
          for (int s = 0; s < S; ++s) {
            if (col[s] >= 0) {
              hard[c * S + s] = static_cast<int>(col[s]);
            }
          }
        }
      });
  return hard;
}

std::vector<int> PlainArgmax(std::span<const double> soft, int rows, int k) {
  std::vector<int> hard(rows, 0);
  for (int r = 0; r < rows; ++r) {
    const double* row = soft.data() + static_cast<size_t>(r) * k;
    int best = 0;
    for (int j = 0; j < k; ++j) {
      if (std::isnan(row[j])) {
        best = j;
        break;
      }
      if (row[j] > row[best]) best = j;
    }
    hard[r] = static_cast<int>(best);
  }
  return hard;
}

}  // namespace diarization::pipeline
