// pyannote's VBxClustering.__call__ (pipeline.md §7): training subset → AHC
// → PLDA → VBx → centroids → (KMeans override) → assignment. Returns every
// intermediate so tests can compare each stage with pyannote's recordings.
#ifndef DIARIZATION_ENGINE_PIPELINE_CLUSTERING_H_
#define DIARIZATION_ENGINE_PIPELINE_CLUSTERING_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/ahc.h"
#include "engine/pipeline/config.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/segmentation_summary.h"
#include "engine/pipeline/train_filter.h"
#include "engine/pipeline/vbx.h"

namespace diarization::pipeline {

// Validated speaker-count hints (pyannote set_num_speakers): min defaults to
// 1, max to "unbounded" (0 here), num is set when min == max.
struct ResolvedHints {
  int num = 0;  // 0 = not fixed
  int min = 1;
  int max = 0;  // 0 = unbounded
};
// The one rule for speaker hints (the engine checks it at submission, the
// pipeline before clustering): InvalidArgument, with one message, for a
// negative value or min > max once num is applied (num overrides min/max).
// The server adds its API limits before (server/request_validation).
absl::StatusOr<ResolvedHints> ResolveHints(const SpeakerHints& hints);

// Wall seconds of each clustering step (steady clock), for benchmarks.
struct ClusteringTimes {
  double filter_s = 0.0;      // training set and inactive speakers (with a
                              // summary: the NaN check and the rows only)
  double ahc_s = 0.0;         // normalisation, distances, linkage, fcluster
                              // (and plda_s, unless the linkage ran on an
                              // accelerator, beside which the PLDA runs)
  AhcTimes ahc;               // its split, and whether the linkage ran on
                              // AhcOptions::accelerator
  double plda_s = 0.0;        // x-vector and PLDA transforms
  double vbx_s = 0.0;         // VBx and the weighted centroids
  double assignment_s = 0.0;  // (KMeans,) soft scores and the argmax
};

struct ClusteringResult {
  TrainSet train;
  std::vector<bool> inactive;         // (C × 3) Σ_f seg == 0
  std::vector<int> ahc_labels;        // (N), empty when N < 2
  std::vector<double> xvec;           // (N × 128) x-vector transform
  std::vector<double> plda_features;  // (N × 128)
  VbxResult vbx;                      // γ (N × S), π (S), ELBO
  bool kmeans = false;                // the KMeans override ran
  int num_clusters = 0;               // K: centroid rows
  std::vector<double> centroids;      // (K × 256); NaN row when N == 0
  std::vector<double> soft;           // (C × 3 × K), constrained: after the
                                      // inactive overwrite; empty when N < 2
  std::vector<int> hard;              // (C × 3) raw assignment (before the
                                      // pipeline's inactive → −2 override)
  ClusteringTimes times;
};

struct ClusteringOptions {
  double threshold = 0.6;
  VbxOptions vbx;
  double init_smoothing = 7.0;
  double min_prior = 1e-7;
  AhcOptions ahc;
};

// `summary`: SummarizeSegmentation of these segmentations, whose inactive
// and clean pairs are then not scanned again; null: scanned here.
absl::StatusOr<ClusteringResult> VbxClustering(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const ResolvedHints& hints,
    const ClusteringOptions& options,
    const SegmentationSummary* summary = nullptr);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_CLUSTERING_H_
