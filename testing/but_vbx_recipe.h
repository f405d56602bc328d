// BUT's VBx diarization recipe (BUTSpeechFIT/VBx vbhmm.py, --init AHC+VB):
// x-vectors → LDA transform → cosine-similarity AHC (average linkage,
// threshold from a two-Gaussian calibration of the scores) → VB-HMM (vbx.h
// with loopP) → label of the most responsible speaker → merged segments.
// An independent check of the general VBx (../shared/data/vbx-example).
// float64 throughout, as numpy. Test-only: it serves but_vbx_recipe_test.
#ifndef DIARIZATION_TESTING_BUT_VBX_RECIPE_H_
#define DIARIZATION_TESTING_BUT_VBX_RECIPE_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/vbx.h"

namespace diarization::testing {

struct ButVbxOptions {
  double threshold = -0.015;  // AHC bias
  int lda_dim = 128;
  double init_smoothing = 5.0;
  // Cluster numbering (it decides the output labels, not the partition):
  // true = the recipe that produced exp/ES2005a.rttm (VBx@f8c7a9a, 2021: its
  // own UPGMA, clusters numbered by first occurrence); false = today's
  // vbhmm.py (fastcluster + scipy fcluster numbering).
  bool first_occurrence_labels = true;
  pipeline::VbxOptions vbx{.fa = 0.3,
                           .fb = 17,
                           .max_iters = 40,
                           .epsilon = 1e-6,
                           .loop_prob = 0.99,
                           .hmm = true};
};

// diarization_lib.twoGMMcalib_lin: threshold between two Gaussians (shared
// variance) fitted by 20 EM steps to the scores.
double TwoGmmCalibrationThreshold(std::span<const double> scores,
                                  int iterations = 20);

// diarization_lib.merge_adjacent_labels: joins touching/overlapping runs of
// one label and splits overlaps between labels at their middle.
void MergeAdjacentLabels(std::vector<double>& starts, std::vector<double>& ends,
                         std::vector<int>& labels);

struct ButVbxResult {
  std::vector<int> ahc_labels;
  pipeline::VbxResult vbx;
  std::vector<int> labels;  // per x-vector, argmax of γ
  std::vector<double> starts, ends;
  std::vector<int> segment_labels;  // after merging
};

// xvectors: n × plda.input_dim; `plda` built from transform.h5 and the Kaldi
// PLDA with scale_by_sqrt_dim = false.
ButVbxResult RunButVbx(std::span<const float> xvectors, int n,
                       const pipeline::PldaModel& plda,
                       std::vector<double> starts, std::vector<double> ends,
                       const ButVbxOptions& options = {});

// vbhmm.write_output: "SPEAKER file 1 %03f %03f <NA> <NA> label+1 <NA> <NA>".
std::string ButRttm(const std::string& file, const ButVbxResult& result);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_BUT_VBX_RECIPE_H_
