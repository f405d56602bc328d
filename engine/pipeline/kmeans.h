// K-means fallback when speaker-count hints contradict VBx (pipeline.md
// §7.7; pyannote calls sklearn KMeans(n_clusters, n_init=3,
// random_state=42) on the float32 unit-normalised training embeddings).
//
// Same algorithm family as sklearn: greedy k-means++ seeding (2 + ⌊ln k⌋
// candidates per centre), Lloyd iterations to convergence (tol 1e-4 of the
// mean variance, at most 300), best inertia of n_init runs. It is NOT
// bit-identical to sklearn: sklearn's seeding draws from numpy's
// RandomState(42) (MT19937 + its own sampling), which is not reproduced
// here. Runs are deterministic (std::mt19937_64 seeded with `seed`).
// Computation in float64.
#ifndef DIARIZATION_ENGINE_PIPELINE_KMEANS_H_
#define DIARIZATION_ENGINE_PIPELINE_KMEANS_H_

#include <cstdint>
#include <span>
#include <vector>

namespace diarization::pipeline {

struct KMeansOptions {
  int n_init = 3;
  int max_iter = 300;
  double tol = 1e-4;
  uint64_t seed = 42;
};

// Labels 0..k−1 for the n rows of x (n × d). Requires 1 <= k <= n.
std::vector<int> KMeans(std::span<const float> x, int n, int d, int k,
                        const KMeansOptions& options = {});

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_KMEANS_H_
