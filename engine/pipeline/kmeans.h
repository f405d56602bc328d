// K-means fallback when speaker-count hints contradict VBx (pipeline.md
// §7.7). pyannote.audio 4.0.x's VBxClustering calls
//   sklearn.cluster.KMeans(n_clusters=num, n_init=3, random_state=42,
//                          copy_x=False).fit_predict(train_embeddings_normed)
// on the float32 unit-normalised (256-d, raw, not PLDA) training embeddings.
//
// This is scikit-learn 1.9.1's KMeans (default init "k-means++", algorithm
// "lloyd", max_iter 300, tol 1e-4) on float32 input, step for step, in
// float32 where sklearn is (sklearn/cluster/_kmeans.py, _k_means_lloyd.pyx,
// _k_means_common.pyx, metrics/pairwise.py):
//   1. tol = mean(var(X, axis=0)) · 1e-4 on the raw X, float32;
//   2. X -= X.mean(axis=0) (undone at the end; only labels are returned);
//   3. RandomState(42) (kmeans_random_state.h) shared by the n_init runs in
//      turn (1.9.1 draws no per-run seeds);
//   4. k-means++: first centre by choice(n, p=w/Σw); then per centre
//      2 + ⌊ln k⌋ candidates: uniform · potential, searchsorted (left) in the
//      float32 cumsum, clipped; distances through the float64 upcast of
//      _euclidean_distances, rounded to float32; candidate potentials by
//      BLAS (sdot, sgemv) as numpy's matmul calls it; first minimum wins;
//   5. Lloyd: chunks of 256 samples; distances ‖c‖² − 2·x·cᵀ by sgemm
//      (RowMajor, NoTrans, Trans, α −2, β 1) onto numpy-einsum ‖c‖²; first
//      minimum; per-thread float32 sums of the members; empty clusters
//      relocated to the farthest points; centres ×= (float)(1/weight);
//      stop on identical labels (strict), else when Σ shift² ≤ tol; without
//      strict convergence a final E-step relabels against the last centres;
//   6. inertia in float32; a later run replaces the best only when its
//      inertia is strictly smaller AND its partition differs (up to
//      renumbering) from the best's.
// Labels are sklearn's: cluster j is the one grown from the j-th k-means++
// centre.
//
// Where it can differ from sklearn (deliberately, documented):
//   - BLAS: the sgemm/sgemv/sdot/dgemm calls go to the OpenBLAS linked here,
//     sklearn's to the OpenBLAS bundled with scipy/numpy. Identical where
//     both select the same kernel for the CPU (checked on SkylakeX with
//     Debian's 0.3.21 against the wheels' 0.3.30/0.3.31). With another
//     kernel set (Debian's Prescott fallback on Emerald Rapids, ADR 0080,
//     against the wheels' SkylakeX) about one problem in a few thousand
//     ends in another partition after a near-tie; the parity test runs ours
//     with sklearn's kernels.
//   - Threads: sklearn sums the per-thread partial centre sums (Lloyd) and
//     inertia in the order its OpenMP threads finish. With one or two
//     threads that order cannot change a float sum; from three on sklearn
//     itself is not reproducible and we add in thread order. `threads` is
//     sklearn's n_threads (its process's OpenMP thread count).
//   - Two or more clusters empty in the same iteration: numpy's
//     argpartition leaves the farthest points in an unspecified order; we
//     take them farthest first (ties: higher index first). One empty
//     cluster is exact (numpy takes the last maximum).
#ifndef DIARIZATION_ENGINE_PIPELINE_KMEANS_H_
#define DIARIZATION_ENGINE_PIPELINE_KMEANS_H_

#include <cstdint>
#include <span>
#include <vector>

namespace diarization::pipeline {

struct KMeansOptions {
  int n_init = 3;
  int max_iter = 300;
  float tol = 1e-4f;
  uint32_t seed = 42;
  // sklearn's n_threads (_openmp_effective_n_threads()). 1 gives the answer
  // of sklearn under OMP_NUM_THREADS=1; 2 that of a two-core machine. Same
  // answer for any value when n <= 256 except for near-equal inertias.
  int threads = 1;
};

// Labels 0..k−1 for the n rows of x (n × d), as sklearn's fit_predict.
// Requires 1 <= k <= n.
std::vector<int> KMeans(std::span<const float> x, int n, int d, int k,
                        const KMeansOptions& options = {});

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_KMEANS_H_
