// Variational Bayes clustering of x-vectors (pipeline.md §7.5; pyannote
// utils/vbx.py VBx / cluster_vbx, derived from BUT's VBx). float64.
//
// `loop_prob` = 0 is pyannote's model (no HMM: every x-vector draws its
// speaker independently from π, "GMM update"). `loop_prob` > 0 is BUT's
// VB-HMM (BUTSpeechFIT/VBx VBx.py): speakers follow a Markov chain that stays
// with probability loop_prob, responsibilities come from forward–backward.
#ifndef DIARIZATION_ENGINE_PIPELINE_VBX_H_
#define DIARIZATION_ENGINE_PIPELINE_VBX_H_

#include <span>
#include <vector>

namespace diarization::pipeline {

struct VbxOptions {
  double fa = 0.07;
  double fb = 0.8;
  int max_iters = 20;
  double epsilon = 1e-4;
  double loop_prob = 0.0;
  // Use the HMM (forward–backward) even when loop_prob is 0; with 0 it is
  // mathematically pyannote's model (a test checks the two paths agree).
  bool hmm = false;
};

struct VbxResult {
  std::vector<double> gamma;  // (N × S) responsibilities
  std::vector<double> pi;     // (S) speaker priors
  std::vector<double> elbo;   // per iteration
};

// x: N × D features, phi: D across-class variances, gamma_init: N × S.
VbxResult Vbx(std::span<const double> x, int n, int d,
              std::span<const double> phi, std::vector<double> gamma_init,
              int num_speakers, const VbxOptions& options);

// softmax(smoothing · onehot(labels)) per row (N × S, S = max label + 1);
// a negative smoothing gives the plain one-hot.
std::vector<double> VbxInitialGamma(std::span<const int> labels,
                                    double smoothing);

// pyannote cluster_vbx: γ⁰ from the AHC labels (smoothing 7), π = 1/S.
VbxResult ClusterVbx(std::span<const int> ahc_labels,
                     std::span<const double> fea, int d,
                     std::span<const double> phi, const VbxOptions& options,
                     double init_smoothing = 7.0);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_VBX_H_
