// Centroids and assignment of every (window, local speaker) embedding to a
// global speaker (pipeline.md §7.6 and §7.8; pyannote VBxClustering.__call__
// and BaseClustering.constrained_argmax). float64, as scipy cdist.
//
// The constrained case solves, per window, a 3 × K linear sum assignment
// (scipy.optimize.linear_sum_assignment, maximize=True):
// LinearSumAssignmentMax, from linear_sum_assignment.h.
#ifndef DIARIZATION_ENGINE_PIPELINE_ASSIGNMENT_H_
#define DIARIZATION_ENGINE_PIPELINE_ASSIGNMENT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "engine/pipeline/linear_sum_assignment.h"

namespace diarization::pipeline {

// centroid_k = Σ_n W[n,k]·train_n / Σ_n W[n,k] over the kept columns of the
// responsibilities (π_k > min_prior), in their order. train: N × D float32.
std::vector<double> WeightedCentroids(std::span<const float> train, int n,
                                      int d, std::span<const double> gamma,
                                      int s, std::span<const double> pi,
                                      double min_prior, int* num_kept);

// Per-cluster means of train rows with the given labels (0..k−1).
std::vector<double> MeanCentroids(std::span<const float> train, int n, int d,
                                  std::span<const int> labels, int k);

// soft[r, k] = 2 − cosine_distance(embedding_r, centroid_k) for the rows of
// `embeddings` (rows × D float32); NaN rows give NaN. `threads` (>= 1)
// split the rows of the elementwise passes around the GEMM (each row is
// computed alone: the same bits on any count; the pipeline passes
// OpenBLAS's thread count, as for the GEMM).
std::vector<double> SoftClusters(std::span<const float> embeddings, int rows,
                                 int d, std::span<const double> centroids,
                                 int k, int threads = 1);

// Constrained assignment: inactive rows get min(soft) − 1 (written into
// `soft`, as pyannote), NaN → nanmin, then one LSAP per window of 3 rows
// (the windows split over `threads`, each solved alone: the same result on
// any count). Unassigned rows keep −2.
std::vector<int> ConstrainedArgmax(std::vector<double>& soft, int num_windows,
                                   int k, const std::vector<bool>& inactive,
                                   int threads = 1);

// Unconstrained: argmax over k per row (first maximum; a NaN wins, as
// np.argmax).
std::vector<int> PlainArgmax(std::span<const double> soft, int rows, int k);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_ASSIGNMENT_H_
