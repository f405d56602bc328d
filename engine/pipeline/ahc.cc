#include "engine/pipeline/ahc.h"

#include <cblas.h>
#include <emmintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <numeric>
#include <thread>
#include <utility>

#include "engine/common/indexed_min_heap.h"
#include "engine/common/openblas_threads.h"
#include "engine/common/parallel_ranges.h"
#include "engine/pipeline/ahc_blockwise.h"
#include "engine/pipeline/pdist_direct.h"

namespace diarization::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// IndexedMinHeap over arrays of its own, initialised from `values` (by
// key), which it then owns: value(key) is each key's current value.
class MinHeap {
 public:
  explicit MinHeap(std::vector<double> values)
      // values_ is declared (so initialised) first; the others take its
      // size, `values` being moved from.
      : values_(std::move(values)),
        heap_values_(values_.size()),
        heap_(values_.size()),
        pos_(values_.size()) {
    std::iota(heap_.begin(), heap_.end(), 0);
    std::iota(pos_.begin(), pos_.end(), 0);
    h_ = {values_.data(), heap_values_.data(), heap_.data(), pos_.data(),
          static_cast<int>(values_.size())};
    h_.Heapify();
  }
  int top_key() const { return h_.top_key(); }
  double value(int key) const { return values_[key]; }
  double top_value() const { return h_.top_value(); }
  void RemoveMin() { h_.RemoveMin(); }
  void ChangeValue(int key, double value) { h_.ChangeValue(key, value); }

 private:
  std::vector<double> values_;
  std::vector<double> heap_values_;
  std::vector<int> heap_;
  std::vector<int> pos_;
  diarization::IndexedMinHeap h_;
};

// scipy _hierarchy_distance_update.pxi `_centroid`, same operation order:
// sqrt(((nx·d_xi² + ny·d_yi²) − (nx·ny·d_xy²)/(nx + ny)) / (nx + ny)). The
// term that depends on the merge only (CentroidMergeTerm) is computed once
// per merge rather than once per cluster: the same value whenever it is
// computed, so the same bits (and ~10 % off the host linkage).
inline double CentroidMergeTerm(double d_xy, int nx, int ny) {
  return (static_cast<double>(nx * ny) * d_xy * d_xy) / (nx + ny);
}
inline double CentroidUpdate(double d_xi, double d_yi, double merge_term,
                             int nx, int ny) {
  return std::sqrt((((nx * d_xi * d_xi) + (ny * d_yi * d_yi)) - merge_term) /
                   (nx + ny));
}

// numpy's pairwise summation (umath loops, PW_BLOCKSIZE 128, 8 partial
// sums), which np.linalg.norm uses along a contiguous float32 row.
float PairwiseSumF32(const float* a, int n) {
  if (n < 8) {
    float res = 0.0f;
    for (int i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    float res =
        ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSumF32(a, n2) + PairwiseSumF32(a + n2, n - n2);
}

// Writes a condensed upper triangle into `out` (n × n, row-major): a zero
// diagonal, the upper triangle, and its mirror.
void ScatterCondensed(std::span<const double> condensed, int n,
                      std::span<double> out) {
  size_t k = 0;
  for (int i = 0; i < n; ++i) {
    double* row = out.data() + static_cast<size_t>(i) * n;
    row[i] = 0.0;
    for (int j = i + 1; j < n; ++j, ++k) {
      row[j] = condensed[k];
      out[static_cast<size_t>(j) * n + i] = condensed[k];
    }
  }
}

// scipy's condensed upper triangle (row-major, i < j) as a full symmetric
// matrix with a zero diagonal.
SquareMatrix SquareFromCondensed(std::span<const double> condensed, int n) {
  SquareMatrix m(static_cast<size_t>(n) * n);
  ScatterCondensed(condensed, n, m);
  return m;
}

}  // namespace

void* AllocateDistanceMatrix(size_t bytes) {
  constexpr size_t kHuge = size_t{1} << 21;
  if (bytes < 4 * kHuge) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (p == nullptr) throw std::bad_alloc();
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failure is harmless
  return p;
}

void FreeDistanceMatrix(void* p) { std::free(p); }

std::vector<double> PdistEuclidean(std::span<const float> x, int n, int d) {
  std::vector<double> out(static_cast<size_t>(n) * (n - 1) / 2);
  PdistDirect(x, n, d, out, openblas_get_num_threads());
  return out;
}

SquareMatrix PdistSquare(std::span<const float> x, int n, int d) {
  SquareMatrix m(static_cast<size_t>(n) * n);
  PdistSquareInto(x, n, d, m);
  return m;
}

void PdistSquareInto(std::span<const float> x, int n, int d,
                     std::span<double> out) {
  PdistDirectSquare(x, n, d, out, openblas_get_num_threads());
  MirrorUpperTriangle(out, n);
}

SquareMatrix PdistSquareGram(std::span<const double> xd, int n, int d) {
  SquareMatrix m(static_cast<size_t>(n) * n);
  PdistSquareGramInto(xd, n, d, m);
  return m;
}

void PdistSquareGramInto(std::span<const double> xd, int n, int d,
                         std::span<double> m) {
  // Gram form straight into the square matrix: one DSYRK (upper triangle of
  // X·Xᵀ, OpenBLAS), then distances in place and the mirror image.
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, d, 1.0, xd.data(), d,
              0.0, m.data(), n);
  std::vector<double> sq(n);
  for (int i = 0; i < n; ++i) sq[i] = m[static_cast<size_t>(i) * n + i];
  // The elementwise pass (~12 ms for 3906 points on one core) takes as many
  // threads as the DSYRK had: each entry is computed alone, so the split
  // does not change a bit.
  ForUpperTriangleRows(
      n, openblas_get_num_threads(), /*min_rows_per_range=*/256,
      [&](int begin, int end) {
        for (int i = begin; i < end; ++i) {
          double* r = m.data() + static_cast<size_t>(i) * n;
          r[i] = 0.0;
          const __m128d si = _mm_set1_pd(sq[i]);
          const __m128d two = _mm_set1_pd(2.0);
          const __m128d zero = _mm_setzero_pd();
          int j = i + 1;
          // SSE2 (every x86-64): IEEE sqrt, bit-identical to std::sqrt.
          for (; j + 1 < n; j += 2) {
            __m128d v = _mm_sub_pd(_mm_add_pd(si, _mm_loadu_pd(&sq[j])),
                                   _mm_mul_pd(two, _mm_loadu_pd(r + j)));
            _mm_storeu_pd(r + j, _mm_sqrt_pd(_mm_max_pd(v, zero)));
          }
          for (; j < n; ++j)
            r[j] = std::sqrt(std::max(sq[i] + sq[j] - 2.0 * r[j], 0.0));
        }
      });
  MirrorUpperTriangle(m, n);
}

void MirrorUpperTriangle(std::span<double> m, int n) {
  // 64 × 64 tiles (cache-friendly transpose).
  constexpr int kTile = 64;
  for (int i0 = 0; i0 < n; i0 += kTile) {
    for (int j0 = 0; j0 <= i0; j0 += kTile) {
      for (int i = i0; i < std::min(i0 + kTile, n); ++i) {
        for (int j = j0; j < std::min({j0 + kTile, n, i}); ++j) {
          m[static_cast<size_t>(i) * n + j] = m[static_cast<size_t>(j) * n + i];
        }
      }
    }
  }
}

std::vector<Merge> CentroidLinkage(std::vector<double>& condensed, int n,
                                   std::span<const int> initial_sizes) {
  if (n < 2) return {};
  // A full symmetric matrix instead of scipy's condensed one: the distances
  // of the merged cluster are then one contiguous row to read and update (a
  // condensed column walk costs a cache and TLB miss per cluster).
  SquareMatrix m = SquareFromCondensed(condensed, n);
  std::vector<double>().swap(condensed);
  return CentroidLinkageSquare(m, n, initial_sizes);
}

std::vector<Merge> CentroidLinkageSquare(std::span<double> m, int n,
                                         std::span<const int> initial_sizes) {
  std::vector<Merge> z;
  if (n < 2) return z;
  z.reserve(n - 1);
  auto row = [&](int i) { return m.data() + static_cast<size_t>(i) * n; };

  std::vector<int> size(n, 1), cluster_id(n), neighbor(n, -1);
  if (initial_sizes.size() == static_cast<size_t>(n)) {
    size.assign(initial_sizes.begin(), initial_sizes.end());
  }
  std::iota(cluster_id.begin(), cluster_id.end(), 0);
  // Live clusters, ascending: the searches and updates only visit these.
  std::vector<int> live(n);
  std::iota(live.begin(), live.end(), 0);
  // scipy find_min_dist: nearest live neighbour with a larger index, first
  // strict minimum.
  auto find_min = [&](int x) -> std::pair<int, double> {
    double best = kInf;
    int key = -1;
    const double* r = row(x);
    for (auto it = std::upper_bound(live.begin(), live.end(), x);
         it != live.end(); ++it) {
      const double v = r[*it];
      if (v < best) {
        best = v;
        key = *it;
      }
    }
    return {key, best};
  };
  std::vector<double> min_dist(n - 1, kInf);
  for (int x = 0; x < n - 1; ++x) {
    auto [key, value] = find_min(x);
    neighbor[x] = key;
    min_dist[x] = value;
  }
  // From here the heap holds the candidates' distances (scipy's min_dist).
  MinHeap heap(std::move(min_dist));

  for (int k = 0; k < n - 1; ++k) {
    int x = 0, y = 0;
    double dist = 0.0;
    // Pop candidates until one is still exact (lazy repair, as scipy).
    for (int i = 0; i < n - k; ++i) {
      x = heap.top_key();
      dist = heap.top_value();
      y = neighbor[x];
      if (y >= 0 && dist == row(x)[y]) break;
      auto [key, value] = find_min(x);
      y = key;
      dist = value;
      neighbor[x] = y;
      heap.ChangeValue(x, dist);
    }
    heap.RemoveMin();

    int id_x = cluster_id[x], id_y = cluster_id[y];
    const int nx = size[x], ny = size[y];
    if (id_x > id_y) std::swap(id_x, id_y);
    z.push_back({id_x, id_y, dist, nx + ny});
    size[x] = 0;
    size[y] = nx + ny;
    cluster_id[y] = n + k;
    live.erase(std::lower_bound(live.begin(), live.end(), x));

    // One pass over the live clusters, in ascending order, doing scipy's
    // three loops for each z (they touch only z's own entries): the
    // Lance–Williams update of d(z, y), the neighbour hand-over x → y, and
    // the lower-bound refresh.
    double* ry = row(y);
    const double* rx = row(x);
    const double merge_term = CentroidMergeTerm(dist, nx, ny);
    const size_t live_count = live.size();
    for (size_t li = 0; li < live_count; ++li) {
      const int zi = live[li];
      // The mirrored entry is one scattered write per cluster: fetch its
      // cache line ahead so the store does not stall the loop.
      if (li + 16 < live_count)
        __builtin_prefetch(row(live[li + 16]) + y, 1, 0);
      if (zi == y) continue;
      const double v = CentroidUpdate(rx[zi], ry[zi], merge_term, nx, ny);
      ry[zi] = v;
      row(zi)[y] = v;
      if (zi < x && neighbor[zi] == x) neighbor[zi] = y;
      if (zi < y && v < heap.value(zi)) {
        neighbor[zi] = y;
        heap.ChangeValue(zi, v);
      }
    }
    if (y < n - 1) {
      auto [key, value] = find_min(y);
      if (key != -1) {
        neighbor[y] = key;
        heap.ChangeValue(y, value);
      }
    }
  }
  return z;
}

std::vector<int> FclusterDistance(const std::vector<Merge>& z, int n,
                                  double t) {
  std::vector<int> labels(n, 0);
  if (n == 1) {
    labels[0] = 1;
    return labels;
  }
  // MD[k]: largest height in the subtree of node n+k (handles inversions).
  std::vector<double> md(z.size());
  for (size_t k = 0; k < z.size(); ++k) {
    double m = z[k].distance;
    if (z[k].a >= n) m = std::max(m, md[z[k].a - n]);
    if (z[k].b >= n) m = std::max(m, md[z[k].b - n]);
    md[k] = m;
  }
  // scipy cluster_monocrit: iterative DFS from the root.
  std::vector<int> stack(n);
  std::vector<uint8_t> visited(2 * n - 1, 0);
  int k = 0, n_cluster = 0, leader = -1;
  stack[0] = 2 * n - 2;
  while (k >= 0) {
    const int root = stack[k] - n;
    const int lc = z[root].a, rc = z[root].b;
    if (leader == -1 && md[root] <= t) {
      leader = root;
      ++n_cluster;
    }
    if (lc >= n && !visited[lc]) {
      visited[lc] = 1;
      stack[++k] = lc;
      continue;
    }
    if (rc >= n && !visited[rc]) {
      visited[rc] = 1;
      stack[++k] = rc;
      continue;
    }
    if (lc < n) {
      if (leader == -1) ++n_cluster;
      labels[lc] = n_cluster;
    }
    if (rc < n) {
      if (leader == -1) ++n_cluster;
      labels[rc] = n_cluster;
    }
    if (leader == root) leader = -1;
    --k;
  }
  return labels;
}

std::vector<float> NormalizeRowsF32(std::span<const float> x, int n, int d) {
  std::vector<float> out(x.begin(), x.begin() + static_cast<size_t>(n) * d);
  for (int i = 0; i < n; ++i) {
    float* row = out.data() + static_cast<size_t>(i) * d;
    // np.linalg.norm on float32: sqrt(add.reduce(x * x)) in float32.
    std::vector<float> sq(d);
    for (int t = 0; t < d; ++t) sq[t] = row[t] * row[t];
    const float norm = std::sqrt(PairwiseSumF32(sq.data(), d));
    for (int t = 0; t < d; ++t) row[t] = row[t] / norm;
  }
  return out;
}

std::vector<int> AhcCluster(std::span<const float> embeddings, int n, int d,
                            const AhcOptions& options, AhcTimes* times) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const std::vector<float> normed = NormalizeRowsF32(embeddings, n, d);
  std::vector<int> flat;
  if (n <= options.exact_max_n) {
    std::unique_ptr<LinkageAccelerator::Call> call =
        options.accelerator != nullptr && n <= options.accelerator->max_n()
            ? options.accelerator->Reserve(n, d)
            : nullptr;
    const auto t1 = Clock::now();
    std::vector<Merge> z;
    bool accelerated = false, beside_done = false;
    if (call != nullptr) {
      // The device computes the distances and the merges; the caller's
      // independent work runs beside it, joined before anything else here.
      std::thread beside;
      if (options.beside_linkage) {
        beside = std::thread(options.beside_linkage);
        beside_done = true;
      }
      accelerated = call->Run(normed, &z);
      if (beside.joinable()) beside.join();
      call.reset();  // gives the accelerator back before the host's work
    }
    double host_pdist_s = 0.0;
    if (!accelerated) {
      // The same distances and merges on the host (also when the device's
      // call failed).
      const auto h0 = Clock::now();
      SquareMatrix square(static_cast<size_t>(n) * n);
      PdistSquareInto(normed, n, d, square);
      host_pdist_s = std::chrono::duration<double>(Clock::now() - h0).count();
      z = CentroidLinkageSquare(square, n);
    }
    // Without a device call the caller's work runs here, after the host's
    // distances and merges (never beside the distances' threads).
    if (!beside_done && options.beside_linkage) options.beside_linkage();
    flat = FclusterDistance(z, n, options.threshold);
    if (times != nullptr) {
      times->pdist_s =
          std::chrono::duration<double>(t1 - t0).count() + host_pdist_s;
      times->linkage_s =
          std::chrono::duration<double>(Clock::now() - t1).count() -
          host_pdist_s;
      times->accelerated = accelerated;
    }
  } else {
    flat = BlockwiseCentroidFcluster(normed, n, d, options.threshold,
                                     options.block_size);
    if (options.beside_linkage) options.beside_linkage();
  }
  // np.unique(..., return_inverse=True): ranks of the distinct ids.
  std::vector<int> ids = flat;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<int> labels(n);
  for (int i = 0; i < n; ++i) {
    labels[i] = static_cast<int>(
        std::lower_bound(ids.begin(), ids.end(), flat[i]) - ids.begin());
  }
  return labels;
}

}  // namespace diarization::pipeline
