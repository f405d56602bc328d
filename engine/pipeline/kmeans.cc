#include "engine/pipeline/kmeans.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/pipeline/kmeans_numpy_sums.h"
#include "engine/pipeline/kmeans_random_state.h"

// Every float expression below is one numpy/Cython operation; the BUILD
// file compiles this with -ffp-contract=off so none is fused into an FMA.
namespace diarization::pipeline {
namespace {

constexpr int kChunk = 256;  // sklearn's CHUNK_SIZE

size_t At(int row, int d) { return static_cast<size_t>(row) * d; }

// libgomp's schedule(static) without a chunk size: thread t of T gets
// ⌊n/T⌋ iterations, one more for the first n mod T threads.
std::pair<int, int> StaticRange(int n, int threads, int t) {
  const int q = n / threads, r = n % threads;
  const int begin = t * q + std::min(t, r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

// sklearn's _euclidean_dense_dense(squared=True): 4-way unrolled.
float EuclideanDenseDense(const float* a, const float* b, int d) {
  float result = 0.0f;
  int i = 0;
  for (; i + 4 <= d; i += 4) {
    const float t0 = (a[i] - b[i]) * (a[i] - b[i]);
    const float t1 = (a[i + 1] - b[i + 1]) * (a[i + 1] - b[i + 1]);
    const float t2 = (a[i + 2] - b[i + 2]) * (a[i + 2] - b[i + 2]);
    const float t3 = (a[i + 3] - b[i + 3]) * (a[i + 3] - b[i + 3]);
    result += ((t0 + t1) + t2) + t3;
  }
  for (; i < d; ++i) result += (a[i] - b[i]) * (a[i] - b[i]);
  return result;
}

// X upcast to float64 once, with its numpy row norms: what every call of
// _euclidean_distances recomputes for its chunks (same values).
struct Upcast {
  std::vector<double> x;
  std::vector<double> norms;
};

Upcast MakeUpcast(const float* x, int n, int d) {
  Upcast u{std::vector<double>(x, x + At(n, d)), std::vector<double>(n)};
  for (int i = 0; i < n; ++i) u.norms[i] = NumpySquaredNorm(&u.x[At(i, d)], d);
  return u;
}

// sklearn's _euclidean_distances(A, X, squared=True) for float32 A and X
// (their float32 norms are ignored): float64 chunks, numpy matmul's BLAS
// call, d = (−2·a·x + ‖a‖²) + ‖x‖², rounded to float32, then max(d, 0).
std::vector<float> UpcastSquaredDistances(const float* a, int m,
                                          const Upcast& x, int n, int d) {
  const double maxmem = std::max(
      (static_cast<double>(m + n) * d + static_cast<double>(m) * n) / 10.0,
      10.0 * (1 << 17));
  const double tmp = 2.0 * d;
  const int batch = std::max(
      static_cast<int>((-tmp + std::sqrt(tmp * tmp + 4 * maxmem)) / 2), 1);
  std::vector<float> out(static_cast<size_t>(m) * n);
  std::vector<double> dot;
  for (int x0 = 0; x0 < m; x0 += batch) {
    const int mx = std::min(batch, m - x0);
    const std::vector<double> xa(a + At(x0, d), a + At(x0 + mx, d));
    std::vector<double> xx(mx);
    for (int i = 0; i < mx; ++i) xx[i] = NumpySquaredNorm(&xa[At(i, d)], d);
    for (int y0 = 0; y0 < n; y0 += batch) {
      const int ny = std::min(batch, n - y0);
      const double* ya = &x.x[At(y0, d)];
      dot.assign(static_cast<size_t>(mx) * ny, 0.0);
      if (mx == 1 && ny == 1) {
        dot[0] = cblas_ddot(d, xa.data(), 1, ya, 1);
      } else if (mx == 1) {  // vector @ matrix: gemv over the rows of ya
        cblas_dgemv(CblasRowMajor, CblasNoTrans, ny, d, 1.0, ya, d, xa.data(),
                    1, 0.0, dot.data(), 1);
      } else if (ny == 1) {  // matrix @ vector
        cblas_dgemv(CblasRowMajor, CblasNoTrans, mx, d, 1.0, xa.data(), d, ya,
                    1, 0.0, dot.data(), 1);
      } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mx, ny, d, 1.0,
                    xa.data(), d, ya, d, 0.0, dot.data(), ny);
      }
      for (int i = 0; i < mx; ++i) {
        for (int j = 0; j < ny; ++j) {
          double v = -2.0 * dot[At(i, ny) + j];
          v += xx[i];
          v += x.norms[y0 + j];
          out[At(x0 + i, n) + y0 + j] = std::max(static_cast<float>(v), 0.0f);
        }
      }
    }
  }
  return out;
}

// sklearn's _kmeans_plusplus with unit sample weights.
std::vector<float> KMeansPlusPlus(const float* x, const Upcast& x64, int n,
                                  int d, int k,
                                  NumpyRandomState& random_state) {
  std::vector<float> centers(At(k, d));
  const std::vector<float> weight(n, 1.0f);
  const int trials = 2 + static_cast<int>(std::log(static_cast<double>(k)));

  // p = sample_weight / sample_weight.sum() in float32, then float64.
  const float total_weight = NumpyPairwiseSum(weight.data(), n);
  const std::vector<double> p(n, static_cast<double>(1.0f / total_weight));
  const int first = random_state.Choice(p);
  std::copy_n(x + At(first, d), d, centers.data());
  std::vector<float> closest =
      UpcastSquaredDistances(x + At(first, d), 1, x64, n, d);
  // closest_dist_sq @ sample_weight: numpy's FLOAT_dot → cblas_sdot.
  float potential = cblas_sdot(n, closest.data(), 1, weight.data(), 1);

  std::vector<float> cumsum(n);
  std::vector<int> candidates(trials);
  std::vector<float> candidate_x(At(trials, d));
  std::vector<float> potentials(trials);
  for (int c = 1; c < k; ++c) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) cumsum[i] = acc += closest[i];
    for (int t = 0; t < trials; ++t) {
      const double r =
          random_state.RandomSample() * static_cast<double>(potential);
      // searchsorted(side="left") in float64: the first cumsum >= r.
      int idx =
          static_cast<int>(std::lower_bound(cumsum.begin(), cumsum.end(), r,
                                            [](float a, double b) {
                                              return static_cast<double>(a) < b;
                                            }) -
                           cumsum.begin());
      candidates[t] = std::min(idx, n - 1);
      std::copy_n(x + At(candidates[t], d), d, candidate_x.data() + At(t, d));
    }
    std::vector<float> dist =
        UpcastSquaredDistances(candidate_x.data(), trials, x64, n, d);
    for (int t = 0; t < trials; ++t) {
      for (int i = 0; i < n; ++i) {
        float& v = dist[At(t, n) + i];
        v = std::min(closest[i], v);  // np.minimum (no NaN here)
      }
    }
    // (trials × n) @ (n × 1): numpy's gemv.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, trials, n, 1.0f, dist.data(), n,
                weight.data(), 1, 0.0f, potentials.data(), 1);
    const int best = static_cast<int>(
        std::min_element(potentials.begin(), potentials.end()) -
        potentials.begin());
    potential = potentials[best];
    std::copy_n(dist.data() + At(best, n), n, closest.data());
    std::copy_n(x + At(candidates[best], d), d, centers.data() + At(c, d));
  }
  return centers;
}

// One lloyd_iter_chunked_dense: labels against `old_centers`; with
// `new_centers`, also the updated centres and each centre's shift.
void LloydIteration(const float* x, int n, int d, int k, int n_threads,
                    const std::vector<float>& old_centers,
                    std::vector<int>& labels, std::vector<float>* new_centers,
                    std::vector<float>* shift) {
  const int chunk = std::min(kChunk, n);
  const int n_chunks = n / chunk + (n % chunk != 0 ? 1 : 0);
  const int threads = std::min(n_threads, n_chunks);
  std::vector<float> norms(k);
  for (int j = 0; j < k; ++j)
    norms[j] = NumpySquaredNorm(&old_centers[At(j, d)], d);

  const bool update = new_centers != nullptr;
  std::vector<float> weight(k, 0.0f);
  if (update) new_centers->assign(At(k, d), 0.0f);
  std::vector<float> distances(static_cast<size_t>(chunk) * k);
  for (int t = 0; t < threads; ++t) {
    std::vector<float> local_centers(update ? At(k, d) : 0, 0.0f);
    std::vector<float> local_weight(k, 0.0f);
    const auto [chunk_begin, chunk_end] = StaticRange(n_chunks, threads, t);
    for (int ci = chunk_begin; ci < chunk_end; ++ci) {
      const int start = ci * chunk;
      const int rows = std::min(chunk, n - start);
      for (int i = 0; i < rows; ++i)
        std::copy_n(norms.data(), k, &distances[At(i, k)]);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d, -2.0f,
                  x + At(start, d), d, old_centers.data(), d, 1.0f,
                  distances.data(), k);
      for (int i = 0; i < rows; ++i) {
        const float* row = &distances[At(i, k)];
        float min_dist = row[0];
        int label = 0;
        for (int j = 1; j < k; ++j) {
          if (row[j] < min_dist) {
            min_dist = row[j];
            label = j;
          }
        }
        labels[start + i] = label;
        if (update) {
          local_weight[label] += 1.0f;
          const float* xi = x + At(start + i, d);
          float* ci_sum = &local_centers[At(label, d)];
          for (int f = 0; f < d; ++f) ci_sum[f] += xi[f] * 1.0f;
        }
      }
    }
    if (update) {  // the locked reduction, in thread order
      for (int j = 0; j < k; ++j) {
        weight[j] += local_weight[j];
        for (int f = 0; f < d; ++f)
          (*new_centers)[At(j, d) + f] += local_centers[At(j, d) + f];
      }
    }
  }
  if (!update) return;
  std::vector<float>& centers = *new_centers;

  // _relocate_empty_clusters_dense.
  std::vector<int> empty;
  for (int j = 0; j < k; ++j) {
    if (weight[j] == 0.0f) empty.push_back(j);
  }
  if (!empty.empty()) {
    std::vector<float> far(n);
    std::vector<float> diff(d);
    for (int i = 0; i < n; ++i) {
      const float* xi = x + At(i, d);
      const float* c = &old_centers[At(labels[i], d)];
      for (int f = 0; f < d; ++f) {
        const float delta = xi[f] - c[f];
        diff[f] = delta * delta;
      }
      far[i] = NumpyPairwiseSum(diff.data(), d);
    }
    if (*std::max_element(far.begin(), far.end()) != 0.0f) {
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      // Farthest first; among equal distances the higher index first (what
      // numpy's argpartition does for kth = n − 1, the one-empty case).
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return far[a] > far[b] || (far[a] == far[b] && a > b);
      });
      for (size_t e = 0; e < empty.size(); ++e) {
        const int new_id = empty[e];
        const int far_idx = order[e];
        const int old_id = labels[far_idx];
        const float* xf = x + At(far_idx, d);
        for (int f = 0; f < d; ++f) {
          centers[At(old_id, d) + f] -= xf[f] * 1.0f;
          centers[At(new_id, d) + f] = xf[f] * 1.0f;
        }
        weight[new_id] = 1.0f;
        weight[old_id] -= 1.0f;
      }
    }
  }

  // _average_centers (in place, so an empty cluster copies the largest
  // one's centre as it stands at that point of the loop).
  const int argmax_weight = static_cast<int>(
      std::max_element(weight.begin(), weight.end()) - weight.begin());
  for (int j = 0; j < k; ++j) {
    if (weight[j] > 0.0f) {
      const float alpha =
          static_cast<float>(1.0 / static_cast<double>(weight[j]));
      for (int f = 0; f < d; ++f) centers[At(j, d) + f] *= alpha;
    } else {
      for (int f = 0; f < d; ++f)
        centers[At(j, d) + f] = centers[At(argmax_weight, d) + f];
    }
  }
  // _center_shift.
  for (int j = 0; j < k; ++j) {
    (*shift)[j] = static_cast<float>(std::sqrt(static_cast<double>(
        EuclideanDenseDense(&centers[At(j, d)], &old_centers[At(j, d)], d))));
  }
}

struct Run {
  std::vector<int> labels;
  float inertia;
};

// sklearn's _kmeans_single_lloyd.
Run SingleLloyd(const float* x, int n, int d, int k, std::vector<float> centers,
                float tol, const KMeansOptions& options) {
  std::vector<float> centers_new(At(k, d), 0.0f);
  std::vector<int> labels(n, -1), labels_old(n, -1);
  std::vector<float> shift(k, 0.0f);
  bool strict = false;
  for (int it = 0; it < options.max_iter; ++it) {
    LloydIteration(x, n, d, k, options.threads, centers, labels, &centers_new,
                   &shift);
    std::swap(centers, centers_new);
    if (labels == labels_old) {
      strict = true;
      break;
    }
    std::vector<float> squared(k);
    for (int j = 0; j < k; ++j) squared[j] = shift[j] * shift[j];
    if (NumpyPairwiseSum(squared.data(), k) <= tol) break;
    labels_old = labels;
  }
  if (!strict) {
    LloydIteration(x, n, d, k, options.threads, centers, labels, nullptr,
                   nullptr);
  }
  // _inertia_dense: prange(n_samples, schedule=static) over n_threads, each
  // thread's float32 partial added to the total in thread order.
  float inertia = 0.0f;
  const int threads = std::max(1, std::min(options.threads, n));
  for (int t = 0; t < threads; ++t) {
    const auto [begin, end] = StaticRange(n, threads, t);
    float partial = 0.0f;
    for (int i = begin; i < end; ++i) {
      partial +=
          EuclideanDenseDense(x + At(i, d), &centers[At(labels[i], d)], d) *
          1.0f;
    }
    inertia += partial;
  }
  return {std::move(labels), inertia};
}

// sklearn's _is_same_clustering: equal up to a renumbering.
bool SameClustering(const std::vector<int>& a, const std::vector<int>& b,
                    int k) {
  std::vector<int> mapping(k, -1);
  for (size_t i = 0; i < a.size(); ++i) {
    if (mapping[a[i]] == -1) {
      mapping[a[i]] = b[i];
    } else if (mapping[a[i]] != b[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<int> KMeans(std::span<const float> xf, int n, int d, int k,
                        const KMeansOptions& options) {
  std::vector<float> x(xf.begin(), xf.begin() + At(n, d));

  // _tolerance on the raw X: np.var(X, axis=0) accumulates row by row in
  // float32, then np.mean over the features is a pairwise sum.
  std::vector<float> mean(d, 0.0f), var(d, 0.0f);
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < d; ++f) mean[f] += x[At(i, d) + f];
  }
  const float count = static_cast<float>(n);
  for (int f = 0; f < d; ++f) mean[f] /= count;
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < d; ++f) {
      const float delta = x[At(i, d) + f] - mean[f];
      const float squared = delta * delta;
      var[f] += squared;
    }
  }
  for (int f = 0; f < d; ++f) var[f] /= count;
  const float mean_var =
      NumpyPairwiseSum(var.data(), d) / static_cast<float>(d);
  const float tol = mean_var * options.tol;

  // X -= X.mean(axis=0): the same float32 mean as above.
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < d; ++f) x[At(i, d) + f] -= mean[f];
  }

  const Upcast x64 = MakeUpcast(x.data(), n, d);
  NumpyRandomState random_state(options.seed);
  std::vector<int> best_labels;
  float best_inertia = 0.0f;
  for (int run = 0; run < options.n_init; ++run) {
    std::vector<float> init =
        KMeansPlusPlus(x.data(), x64, n, d, k, random_state);
    Run r = SingleLloyd(x.data(), n, d, k, std::move(init), tol, options);
    if (best_labels.empty() || (r.inertia < best_inertia &&
                                !SameClustering(r.labels, best_labels, k))) {
      best_labels = std::move(r.labels);
      best_inertia = r.inertia;
    }
  }
  return best_labels;
}

}  // namespace diarization::pipeline
