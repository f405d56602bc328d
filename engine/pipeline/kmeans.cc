#include "engine/pipeline/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace diarization::pipeline {
namespace {

double SqDist(const double* a, const double* b, int d) {
  double s = 0.0;
  for (int t = 0; t < d; ++t) {
    const double diff = a[t] - b[t];
    s += diff * diff;
  }
  return s;
}

std::vector<double> Seed(const std::vector<double>& x, int n, int d, int k,
                         std::mt19937_64& rng) {
  std::vector<double> centers(static_cast<size_t>(k) * d);
  std::uniform_int_distribution<int> first(0, n - 1);
  const int c0 = first(rng);
  std::copy_n(x.data() + static_cast<size_t>(c0) * d, d, centers.data());
  std::vector<double> closest(n);
  for (int i = 0; i < n; ++i)
    closest[i] =
        SqDist(x.data() + static_cast<size_t>(i) * d, centers.data(), d);
  const int trials = 2 + static_cast<int>(std::log(static_cast<double>(k)));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int c = 1; c < k; ++c) {
    double total = 0.0;
    for (double v : closest) total += v;
    int best_candidate = -1;
    double best_potential = std::numeric_limits<double>::infinity();
    std::vector<double> best_closest;
    for (int t = 0; t < trials; ++t) {
      // Sample proportionally to the squared distance to the nearest centre.
      const double r = unit(rng) * total;
      double acc = 0.0;
      int cand = n - 1;
      for (int i = 0; i < n; ++i) {
        acc += closest[i];
        if (acc > r) {
          cand = i;
          break;
        }
      }
      std::vector<double> next(n);
      double potential = 0.0;
      for (int i = 0; i < n; ++i) {
        next[i] = std::min(closest[i],
                           SqDist(x.data() + static_cast<size_t>(i) * d,
                                  x.data() + static_cast<size_t>(cand) * d, d));
        potential += next[i];
      }
      if (potential < best_potential) {
        best_potential = potential;
        best_candidate = cand;
        best_closest = std::move(next);
      }
    }
    std::copy_n(x.data() + static_cast<size_t>(best_candidate) * d, d,
                centers.data() + static_cast<size_t>(c) * d);
    closest = std::move(best_closest);
  }
  return centers;
}

// Labels each point with its nearest centre (the first on ties); returns the
// inertia (sum of squared distances to the chosen centres).
double AssignNearest(const std::vector<double>& x, int n, int d,
                     const std::vector<double>& centers, int k,
                     std::vector<int>& labels) {
  double inertia = 0.0;
  for (int i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (int c = 0; c < k; ++c) {
      const double dist =
          SqDist(x.data() + static_cast<size_t>(i) * d,
                 centers.data() + static_cast<size_t>(c) * d, d);
      if (dist < best) {
        best = dist;
        labels[i] = c;
      }
    }
    inertia += best;
  }
  return inertia;
}

}  // namespace

std::vector<int> KMeans(std::span<const float> xf, int n, int d, int k,
                        const KMeansOptions& options) {
  std::vector<double> x(xf.begin(), xf.begin() + static_cast<size_t>(n) * d);
  // sklearn's tolerance: tol × mean per-feature variance.
  double variance = 0.0;
  for (int t = 0; t < d; ++t) {
    double mean = 0.0;
    for (int i = 0; i < n; ++i) mean += x[static_cast<size_t>(i) * d + t];
    mean /= n;
    double v = 0.0;
    for (int i = 0; i < n; ++i) {
      const double diff = x[static_cast<size_t>(i) * d + t] - mean;
      v += diff * diff;
    }
    variance += v / n;
  }
  const double tol = options.tol * variance / d;
  std::mt19937_64 rng(options.seed);
  std::vector<int> best_labels(n, 0);
  double best_inertia = std::numeric_limits<double>::infinity();
  for (int run = 0; run < options.n_init; ++run) {
    std::vector<double> centers = Seed(x, n, d, k, rng);
    std::vector<int> labels(n, 0);
    for (int iter = 0; iter < options.max_iter; ++iter) {
      AssignNearest(x, n, d, centers, k, labels);
      std::vector<double> next(static_cast<size_t>(k) * d, 0.0);
      std::vector<int> counts(k, 0);
      for (int i = 0; i < n; ++i) {
        ++counts[labels[i]];
        for (int t = 0; t < d; ++t)
          next[static_cast<size_t>(labels[i]) * d + t] +=
              x[static_cast<size_t>(i) * d + t];
      }
      double shift = 0.0;
      for (int c = 0; c < k; ++c) {
        if (counts[c] == 0) {
          // Empty cluster: keep its previous centre.
          std::copy_n(centers.data() + static_cast<size_t>(c) * d, d,
                      next.data() + static_cast<size_t>(c) * d);
          continue;
        }
        for (int t = 0; t < d; ++t)
          next[static_cast<size_t>(c) * d + t] /= counts[c];
        shift += SqDist(next.data() + static_cast<size_t>(c) * d,
                        centers.data() + static_cast<size_t>(c) * d, d);
      }
      centers = std::move(next);
      if (shift <= tol) break;
    }
    // Final labels against the final centres.
    const double inertia = AssignNearest(x, n, d, centers, k, labels);
    if (inertia < best_inertia) {
      best_inertia = inertia;
      best_labels = labels;
    }
  }
  return best_labels;
}

}  // namespace diarization::pipeline
