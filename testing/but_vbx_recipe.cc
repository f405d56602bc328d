#include "testing/but_vbx_recipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "engine/pipeline/ahc.h"
#include "testing/average_linkage.h"

namespace diarization::testing {

using pipeline::ClusterVbx;
using pipeline::FclusterDistance;
using pipeline::Merge;
using pipeline::PldaModel;
using pipeline::PldaTransform;
using pipeline::XvecTransform;

double TwoGmmCalibrationThreshold(std::span<const double> s, int iterations) {
  const double n = static_cast<double>(s.size());
  double mean = 0.0;
  for (double v : s) mean += v;
  mean /= n;
  double var = 0.0;
  for (double v : s) var += (v - mean) * (v - mean);
  var /= n;
  double w[2] = {0.5, 0.5};
  double mu[2] = {mean - std::sqrt(var), mean + std::sqrt(var)};
  double threshold = std::numeric_limits<double>::infinity();
  for (int it = 0; it < iterations; ++it) {
    double cnt[2] = {0, 0}, sum[2] = {0, 0}, sum2[2] = {0, 0};
    const double base0 = std::log(w[0]) - 0.5 * std::log(var);
    const double base1 = std::log(w[1]) - 0.5 * std::log(var);
    for (double v : s) {
      const double l0 = base0 - 0.5 * (v - mu[0]) * (v - mu[0]) / var;
      const double l1 = base1 - 0.5 * (v - mu[1]) * (v - mu[1]) / var;
      const double m = std::max(l0, l1);
      const double e0 = std::exp(l0 - m), e1 = std::exp(l1 - m);
      const double g0 = e0 / (e0 + e1), g1 = e1 / (e0 + e1);
      cnt[0] += g0;
      cnt[1] += g1;
      sum[0] += v * g0;
      sum[1] += v * g1;
      sum2[0] += v * v * g0;
      sum2[1] += v * v * g1;
    }
    const double total = cnt[0] + cnt[1];
    w[0] = cnt[0] / total;
    w[1] = cnt[1] / total;
    mu[0] = sum[0] / cnt[0];
    mu[1] = sum[1] / cnt[1];
    var = (sum2[0] / cnt[0] - mu[0] * mu[0]) * w[0] +
          (sum2[1] / cnt[1] - mu[1] * mu[1]) * w[1];
    const double a0 = std::log(w[0] * w[0] / var) - mu[0] * mu[0] / var;
    const double a1 = std::log(w[1] * w[1] / var) - mu[1] * mu[1] / var;
    threshold = -0.5 * (a0 - a1) / (mu[0] / var - mu[1] / var);
  }
  return threshold;
}

void MergeAdjacentLabels(std::vector<double>& starts, std::vector<double>& ends,
                         std::vector<int>& labels) {
  const size_t n = starts.size();
  if (n == 0) return;
  std::vector<double> s{starts[0]}, e;
  std::vector<int> l{labels[0]};
  for (size_t i = 0; i + 1 < n; ++i) {
    // np.isclose(a, b): |a − b| <= 1e-8 + 1e-5·|b|.
    const bool close = std::abs(ends[i] - starts[i + 1]) <=
                       1e-8 + 1e-5 * std::abs(starts[i + 1]);
    const bool touching = close || ends[i] > starts[i + 1];
    if (!touching || labels[i + 1] != labels[i]) {
      e.push_back(ends[i]);
      s.push_back(starts[i + 1]);
      l.push_back(labels[i + 1]);
    }
  }
  e.push_back(ends[n - 1]);
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i + 1] < e[i]) e[i] = s[i + 1] = (e[i] + s[i + 1]) / 2.0;
  }
  starts = std::move(s);
  ends = std::move(e);
  labels = std::move(l);
}

ButVbxResult RunButVbx(std::span<const float> xvectors, int n,
                       const PldaModel& plda, std::vector<double> starts,
                       std::vector<double> ends, const ButVbxOptions& options) {
  ButVbxResult result;
  const int d = plda.lda_dim;
  const std::vector<double> x = XvecTransform(plda, xvectors, n);
  // cos_similarity: rows re-normalised (+1e-32), then all dot products.
  std::vector<double> xn(x);
  for (int i = 0; i < n; ++i) {
    double sq = 0;
    for (int t = 0; t < d; ++t) sq += xn[i * d + t] * xn[i * d + t];
    const double norm = std::sqrt(sq) + 1e-32;
    for (int t = 0; t < d; ++t) xn[i * d + t] /= norm;
  }
  std::vector<double> scores(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double dot = 0;
      for (int t = 0; t < d; ++t) dot += xn[i * d + t] * xn[j * d + t];
      scores[static_cast<size_t>(i) * n + j] = dot;
    }
  }
  const double thr = TwoGmmCalibrationThreshold(scores);
  // squareform(−scores) → average linkage (fastcluster) → heights shifted
  // by |min| so they are non-negative → fcluster at −(thr + bias) + shift.
  std::vector<double> condensed;
  condensed.reserve(static_cast<size_t>(n) * (n - 1) / 2);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j)
      condensed.push_back(-scores[static_cast<size_t>(i) * n + j]);
  }
  std::vector<Merge> z = AverageLinkage(condensed, n);
  double min_height = std::numeric_limits<double>::infinity();
  for (const Merge& m : z) min_height = std::min(min_height, m.distance);
  const double adjust = std::abs(min_height);
  for (Merge& m : z) m.distance += adjust;
  const std::vector<int> flat =
      FclusterDistance(z, n, -(thr + options.threshold) + adjust);
  result.ahc_labels.resize(n);
  if (options.first_occurrence_labels) {
    // The 2021 recipe's own UPGMA kept each cluster at its smallest member
    // and numbered clusters in that order: by first occurrence in time.
    std::map<int, int> rank;
    for (int i = 0; i < n; ++i) {
      rank.emplace(flat[i], static_cast<int>(rank.size()));
      result.ahc_labels[i] = rank.at(flat[i]);
    }
  } else {
    for (int i = 0; i < n; ++i) result.ahc_labels[i] = flat[i] - 1;
  }

  // VB-HMM on the PLDA features.
  const std::vector<double> fea = PldaTransform(plda, x, n);
  result.vbx = ClusterVbx(result.ahc_labels, fea, d, plda.phi, options.vbx,
                          options.init_smoothing);
  const int s = static_cast<int>(result.vbx.pi.size());
  result.labels.resize(n);
  for (int i = 0; i < n; ++i) {
    const double* row = result.vbx.gamma.data() + static_cast<size_t>(i) * s;
    result.labels[i] = static_cast<int>(std::max_element(row, row + s) - row);
  }
  result.starts = std::move(starts);
  result.ends = std::move(ends);
  result.segment_labels = result.labels;
  MergeAdjacentLabels(result.starts, result.ends, result.segment_labels);
  return result;
}

std::string ButRttm(const std::string& file, const ButVbxResult& r) {
  std::string out;
  for (size_t i = 0; i < r.starts.size(); ++i) {
    absl::StrAppendFormat(
        &out, "SPEAKER %s 1 %03f %03f <NA> <NA> %d <NA> <NA>\n", file,
        r.starts[i], r.ends[i] - r.starts[i], r.segment_labels[i] + 1);
  }
  return out;
}

}  // namespace diarization::testing
