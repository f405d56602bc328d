// Agglomerative clustering that initialises VBx (pipeline.md §7.3; pyannote
// VBxClustering.__call__ → scipy linkage(method="centroid") + fcluster(t,
// criterion="distance")). (BUT's recipe's average linkage is test code:
// testing/average_linkage.h.)
//
// Precision: the unit-normalisation of the embeddings is float32 (numpy on
// float32 arrays); pdist, the Lance–Williams updates and the heights are
// float64, as scipy. The merge loop is Müllner's generic algorithm exactly
// as scipy's `fast_linkage` runs it (nearest-neighbour candidates with a
// lazily repaired min-heap), so every merge and every node id match scipy.
// Memory is O(n²) (the condensed distance matrix): inputs larger than
// `AhcOptions::exact_max_n` go through the bounded-memory variant of
// ahc_blockwise.h (docs/adr/0020-scalable-ahc.md).
#ifndef DIARIZATION_ENGINE_PIPELINE_AHC_H_
#define DIARIZATION_ENGINE_PIPELINE_AHC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace diarization::pipeline {

// Allocator of the n × n distance matrices. No zero-fill: they are written
// in full before they are read, and zeroing 80+ MB costs as much as the
// distances' GEMM. Large blocks are 2 MiB-aligned and advised as huge pages
// (where the kernel allows it): the linkage writes one entry per row of the
// matrix on every merge, and with 4 KiB pages each of those is a TLB miss.
void* AllocateDistanceMatrix(size_t bytes);
void FreeDistanceMatrix(void* p);

template <typename T>
struct DefaultInitAllocator {
  using value_type = T;
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(AllocateDistanceMatrix(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) { FreeDistanceMatrix(p); }
  template <typename U>
  bool operator==(const DefaultInitAllocator<U>&) const {
    return true;
  }
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};
// A full symmetric n × n distance matrix, row-major.
using SquareMatrix = std::vector<double, DefaultInitAllocator<double>>;

// One row of scipy's linkage matrix Z: clusters `a` < `b` (ids: leaves
// 0..n-1, the cluster made at step k is n+k) merged at `distance`.
struct Merge {
  int a = 0;
  int b = 0;
  double distance = 0.0;
  int size = 0;
};

// Index of (i, j), i < j, in a condensed distance vector over n points.
inline int64_t CondensedIndex(int64_t n, int64_t i, int64_t j) {
  return n * i - i * (i + 1) / 2 + j - i - 1;
}

// scipy pdist(x, "euclidean") over float32 rows promoted to float64
// (n × d, row-major); condensed, n(n-1)/2 entries. scipy's own loop and
// bits for every n (pdist_direct.h), on OpenBLAS's thread count.
std::vector<double> PdistEuclidean(std::span<const float> x, int n, int d);

// The same distances as a full symmetric n × n matrix (row-major).
SquareMatrix PdistSquare(std::span<const float> x, int n, int d);
// PdistSquare into `out` (at least n × n).
void PdistSquareInto(std::span<const float> x, int n, int d,
                     std::span<double> out);

// Euclidean distances of float64 rows as a full symmetric matrix through the
// Gram form (one DSYRK): ~1e-16 relative at unit scale, not scipy's bits.
// The blockwise variant's weighted centroids (ahc_blockwise.h), above
// exact_max_n.
SquareMatrix PdistSquareGram(std::span<const double> x, int n, int d);
void PdistSquareGramInto(std::span<const double> x, int n, int d,
                         std::span<double> out);

// Copies the upper triangle of an n × n matrix onto its lower one.
void MirrorUpperTriangle(std::span<double> m, int n);

// CentroidLinkage on a full symmetric n × n matrix (overwritten).
std::vector<Merge> CentroidLinkageSquare(
    std::span<double> square, int n, std::span<const int> initial_sizes = {});

// scipy fast_linkage with the centroid update; `condensed` is overwritten.
// `initial_sizes` (optional, n entries) weights the starting points as
// clusters of that many members (used by the blockwise variant); scipy's
// case is all ones.
std::vector<Merge> CentroidLinkage(std::vector<double>& condensed, int n,
                                   std::span<const int> initial_sizes = {});

// scipy fcluster(Z, t, criterion="distance"): 1-based flat cluster ids,
// numbered as scipy's cluster_monocrit DFS. A subtree is one cluster iff the
// largest merge height inside it is <= t.
std::vector<int> FclusterDistance(const std::vector<Merge>& z, int n, double t);

// Runs the distances and CentroidLinkageSquare somewhere else
// (engine/models/cuda_linkage.h: on the GPU), with the host's distances and
// merges bit for bit. Thread-safe.
class LinkageAccelerator {
 public:
  // One linkage, reserved before the caller commits to it: a refused
  // reservation costs nothing, and the caller runs the host's instead.
  class Call {
   public:
    virtual ~Call() = default;  // gives the accelerator back
    // `rows`: the n unit rows of the reservation (n × d float32,
    // row-major). Computes PdistSquare's distances of them and fills
    // `merges` with CentroidLinkageSquare's merges, both with the host's
    // bits, and returns true; false when it failed (it says why in its own
    // diagnostics): the caller then runs both on the host, with the same
    // merges.
    virtual bool Run(std::span<const float> rows,
                     std::vector<Merge>* merges) = 0;
  };

  virtual ~LinkageAccelerator() = default;
  // The largest n it takes.
  virtual int max_n() const = 0;
  // A call for n points of d coordinates (2 <= n <= max_n()), or null when
  // it cannot take one now (busy with another call, or d beyond what it
  // holds): the caller runs the host's linkage.
  virtual std::unique_ptr<Call> Reserve(int n, int d) = 0;
  // One line on what it did so far (calls, time), for logs and benchmarks.
  virtual std::string Describe() const { return {}; }
};

// Where AhcCluster's time went (seconds), when the caller asks.
struct AhcTimes {
  // Normalisation, and the distance matrix when the host computes it.
  double pdist_s = 0.0;
  // The merges + fcluster; with an accelerator also its distances.
  double linkage_s = 0.0;
  bool accelerated = false;
};

struct AhcOptions {
  // Not owned; null: the host's linkage. Used for n <= its max_n().
  LinkageAccelerator* accelerator = nullptr;
  double threshold = 0.6;
  // Largest input clustered with the exact O(n²)-memory algorithm.
  int exact_max_n = 4096;
  // Block size of the bounded-memory variant used above exact_max_n.
  int block_size = 2048;
  // Work of the caller that does not depend on the clustering (VbxClustering:
  // the PLDA transforms), run exactly once before AhcCluster returns: on a
  // thread of its own while the accelerator's call runs, where the host
  // would only wait for the device; otherwise after the host's linkage.
  // Never beside the host's distances, which take OpenBLAS's thread count
  // of threads. Null: none.
  std::function<void()> beside_linkage;
};

// The pyannote step: x̂ = x/‖x‖ in float32, centroid linkage, fcluster, then
// np.unique(return_inverse). Returns labels 0..S-1 for the n rows of
// `embeddings` (n × d float32, row-major). n >= 2.
std::vector<int> AhcCluster(std::span<const float> embeddings, int n, int d,
                            const AhcOptions& options = {},
                            AhcTimes* times = nullptr);

// Float32 row normalisation as numpy: x / np.linalg.norm(x, axis=1).
std::vector<float> NormalizeRowsF32(std::span<const float> x, int n, int d);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_AHC_H_
