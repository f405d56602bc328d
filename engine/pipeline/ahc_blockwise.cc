#include "engine/pipeline/ahc_blockwise.h"

#include <algorithm>
#include <cmath>

#include "engine/pipeline/ahc.h"

namespace diarization::pipeline {
namespace {

// Weighted points: centroid rows (float64) and member counts.
struct Points {
  int n = 0;
  int d = 0;
  std::vector<double> x;
  std::vector<int> weight;
};

std::vector<double> Pdist(const Points& p, int begin, int count) {
  std::vector<double> out(static_cast<size_t>(count) * (count - 1) / 2);
  size_t k = 0;
  for (int i = 0; i < count; ++i) {
    const double* xi = p.x.data() + static_cast<size_t>(begin + i) * p.d;
    for (int j = i + 1; j < count; ++j) {
      const double* xj = p.x.data() + static_cast<size_t>(begin + j) * p.d;
      double s = 0.0;
      for (int t = 0; t < p.d; ++t) {
        const double diff = xi[t] - xj[t];
        s += diff * diff;
      }
      out[k++] = std::sqrt(s);
    }
  }
  return out;
}

// Exact weighted centroid linkage of rows [begin, begin+count), cut at t.
std::vector<int> ExactFlat(const Points& p, int begin, int count, double t) {
  if (count == 1) return {1};
  const std::span<const int> weights(p.weight.data() + begin,
                                     static_cast<size_t>(count));
  std::vector<Merge> z;
  if (count > 256) {
    // The exact path's storage, with DSYRK distances (ahc.h
    // PdistSquareGram): the weighted centroids are float64 already.
    SquareMatrix square = PdistSquareGram(
        std::span<const double>(p.x.data() + static_cast<size_t>(begin) * p.d,
                                static_cast<size_t>(count) * p.d),
        count, p.d);
    z = CentroidLinkageSquare(square, count, weights);
  } else {
    std::vector<double> condensed = Pdist(p, begin, count);
    z = CentroidLinkage(condensed, count, weights);
  }
  return FclusterDistance(z, count, t);
}

std::vector<int> Cluster(const Points& p, double t, int block) {
  if (p.n <= block) return ExactFlat(p, 0, p.n, t);
  // Level: cluster each block, then the block clusters' weighted centroids.
  Points next;
  next.d = p.d;
  std::vector<int> to_next(p.n);
  for (int begin = 0; begin < p.n; begin += block) {
    const int count = std::min(block, p.n - begin);
    const std::vector<int> flat = ExactFlat(p, begin, count, t);
    const int clusters = *std::max_element(flat.begin(), flat.end());
    const int base = next.n;
    next.n += clusters;
    next.x.resize(static_cast<size_t>(next.n) * p.d, 0.0);
    next.weight.resize(next.n, 0);
    for (int i = 0; i < count; ++i) {
      const int c = base + flat[i] - 1;
      to_next[begin + i] = c;
      const int w = p.weight[begin + i];
      next.weight[c] += w;
      double* dst = next.x.data() + static_cast<size_t>(c) * p.d;
      const double* src = p.x.data() + static_cast<size_t>(begin + i) * p.d;
      for (int k = 0; k < p.d; ++k) dst[k] += w * src[k];
    }
    for (int c = base; c < next.n; ++c) {
      double* dst = next.x.data() + static_cast<size_t>(c) * p.d;
      for (int k = 0; k < p.d; ++k) dst[k] /= next.weight[c];
    }
  }
  std::vector<int> upper;
  if (next.n == p.n) {
    // No block merged anything: nothing within t in time-local blocks.
    // Cluster the whole level exactly rather than loop forever; its memory
    // is what the input itself dictates.
    upper = ExactFlat(next, 0, next.n, t);
  } else {
    upper = Cluster(next, t, block);
  }
  std::vector<int> flat(p.n);
  for (int i = 0; i < p.n; ++i) flat[i] = upper[to_next[i]];
  return flat;
}

}  // namespace

std::vector<int> BlockwiseCentroidFcluster(std::span<const float> normed, int n,
                                           int d, double threshold,
                                           int block_size) {
  Points p;
  p.n = n;
  p.d = d;
  p.x.assign(normed.begin(), normed.begin() + static_cast<size_t>(n) * d);
  p.weight.assign(n, 1);
  return Cluster(p, threshold, std::max(block_size, 2));
}

}  // namespace diarization::pipeline
