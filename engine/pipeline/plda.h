// x-vector transform and PLDA projection (pipeline.md §7.4; pyannote
// utils/vbx.py vbx_setup and core/plda.py). All arithmetic is float64; the
// float32 parameters (mean2, lda) and embeddings are promoted exactly.
//
// Setup solves the generalized symmetric eigenproblem B v = λ W v with
// W = (trᵀtr)⁻¹, B = (trᵀ diag(1/psi) tr)⁻¹ (Eigen's
// GeneralizedSelfAdjointEigenSolver, VᵀWV = I), sorted descending: phi = λ,
// row j of plda_tr = eigenvector j. Eigenvector signs are arbitrary in any
// solver; VBx does not depend on them. Given reference eigenvectors (the
// model folder's `eigenvectors_desc.bin`, pyannote's own LAPACK ones), each
// row is flipped to its sign so the features match pyannote bit for bit.
// This file takes arrays; engine/io/plda_files.h reads the model folder.
#ifndef DIARIZATION_ENGINE_PIPELINE_PLDA_H_
#define DIARIZATION_ENGINE_PIPELINE_PLDA_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::pipeline {

// PLDA parameters (community-1 plda/ folder), float64.
struct PldaModel {
  std::vector<double> mean1;  // (256)
  std::vector<double> mean2;  // (128)
  std::vector<double> lda;    // (256 × 128) row-major
  std::vector<double> mu;     // (128)
  // Eigen-decomposition of the PLDA (generalized eigenproblem of
  // B = (trᵀ diag(1/psi) tr)⁻¹ against W = (trᵀ tr)⁻¹), descending.
  std::vector<double> plda_tr;  // (128 × 128) row-major, row j = eigenvector j
  std::vector<double> phi;      // (128)
  // Where the parameters came from, for GetInfo: SHA-256 (hex) of
  // xvec_transform.npz followed by plda.npz (set by io::LoadPlda).
  std::string sha256;
  int input_dim = 256;  // x-vector size
  int lda_dim = 128;    // PLDA size
  // pyannote scales both l2-normalised vectors by √dim; BUT's VBx recipe
  // does not.
  bool scale_by_sqrt_dim = true;
};

// pyannote's vbx_setup: builds the model from raw parameters (row-major; lda
// is in × out, tr is out × out) and solves the eigenproblem (Eigen's
// generalized self-adjoint eigensolver). `sha256` is left empty.
// `reference_eigenvectors`, when given (out × out, column j = eigenvector j),
// fixes the sign of each eigenvector; it must agree up to sign (|cos| > 1 -
// 1e-6) or this fails.
absl::StatusOr<PldaModel> BuildPlda(
    std::vector<double> mean1, std::vector<double> mean2,
    std::vector<double> lda, std::vector<double> mu,
    const std::vector<double>& tr, const std::vector<double>& psi,
    std::span<const double> reference_eigenvectors = {});

// x-vector transform (pyannote's `xvec_tf`): n × input_dim float32 →
// n × lda_dim float64.
std::vector<double> XvecTransform(const PldaModel& plda,
                                  std::span<const float> embeddings, int n);

// PLDA projection (pyannote's `plda_tf`): (y − mu)·plda_trᵀ, n × lda_dim.
std::vector<double> PldaTransform(const PldaModel& plda,
                                  std::span<const double> xvec, int n);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_PLDA_H_
