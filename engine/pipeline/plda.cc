#include "engine/pipeline/plda.h"

#include <cblas.h>

#include <cmath>
#include <eigen3/Eigen/Dense>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace diarization::pipeline {
namespace {

using RowMat =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

absl::StatusOr<PldaModel> BuildPlda(std::vector<double> mean1,
                                    std::vector<double> mean2,
                                    std::vector<double> lda,
                                    std::vector<double> mu,
                                    const std::vector<double>& tr,
                                    const std::vector<double>& psi,
                                    std::span<const double> reference) {
  const int out = static_cast<int>(mean2.size());
  const int in = static_cast<int>(mean1.size());
  if (out == 0 || in == 0 || lda.size() != static_cast<size_t>(in) * out ||
      mu.size() != static_cast<size_t>(out) ||
      psi.size() != static_cast<size_t>(out) ||
      tr.size() != static_cast<size_t>(out) * out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PLDA parameters have inconsistent sizes: mean1 ", mean1.size(),
        ", mean2 ", mean2.size(), ", lda ", lda.size(), ", mu ", mu.size(),
        ", tr ", tr.size(), ", psi ", psi.size()));
  }
  for (double p : psi) {
    if (!(p > 0.0))
      return absl::InvalidArgumentError("PLDA psi must be positive");
  }
  const Eigen::Map<const RowMat> t(tr.data(), out, out);
  const Eigen::Map<const Eigen::VectorXd> ps(psi.data(), out);
  const Eigen::MatrixXd w = (t.transpose() * t).inverse();
  const Eigen::MatrixXd b =
      (t.transpose() * ps.cwiseInverse().asDiagonal() * t).inverse();
  // Symmetrise the round-off of the inverses before the symmetric solver.
  const Eigen::MatrixXd ws = 0.5 * (w + w.transpose());
  const Eigen::MatrixXd bs = 0.5 * (b + b.transpose());
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> solver(
      bs, ws, Eigen::ComputeEigenvectors | Eigen::Ax_lBx);
  if (solver.info() != Eigen::Success) {
    return absl::InternalError(
        "PLDA generalized eigenproblem did not converge");
  }
  PldaModel model;
  model.input_dim = in;
  model.lda_dim = out;
  model.phi.resize(out);
  model.plda_tr.resize(static_cast<size_t>(out) * out);
  const Eigen::MatrixXd& v = solver.eigenvectors();
  for (int j = 0; j < out; ++j) {
    const int src = out - 1 - j;  // descending
    model.phi[j] = solver.eigenvalues()[src];
    Eigen::VectorXd col = v.col(src);
    if (!reference.empty()) {
      const Eigen::Map<const RowMat> ref(reference.data(), out, out);
      const Eigen::VectorXd r = ref.col(j);
      const double cosine = col.dot(r) / (col.norm() * r.norm());
      if (!(std::abs(cosine) > 1.0 - 1e-6)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "reference eigenvector ", j,
            " disagrees with the PLDA (|cos| = ", std::abs(cosine), ")"));
      }
      if (cosine < 0) col = -col;
    } else {
      // Deterministic convention without a reference: largest entry > 0.
      Eigen::Index arg;
      col.cwiseAbs().maxCoeff(&arg);
      if (col[arg] < 0) col = -col;
    }
    for (int k = 0; k < out; ++k)
      model.plda_tr[static_cast<size_t>(j) * out + k] = col[k];
  }
  model.mean1 = std::move(mean1);
  model.mean2 = std::move(mean2);
  model.lda = std::move(lda);
  model.mu = std::move(mu);
  return model;
}

std::vector<double> XvecTransform(const PldaModel& plda,
                                  std::span<const float> embeddings, int n) {
  const int in = plda.input_dim, out = plda.lda_dim;
  const Eigen::Map<const RowMat> lda(plda.lda.data(), in, out);
  const double scale_in =
      plda.scale_by_sqrt_dim ? std::sqrt(static_cast<double>(in)) : 1.0;
  const double scale_out =
      plda.scale_by_sqrt_dim ? std::sqrt(static_cast<double>(out)) : 1.0;
  RowMat u(n, in);
  for (int i = 0; i < n; ++i) {
    double sq = 0.0;
    for (int k = 0; k < in; ++k) {
      const double v =
          static_cast<double>(embeddings[static_cast<size_t>(i) * in + k]) -
          plda.mean1[k];
      u(i, k) = v;
      sq += v * v;
    }
    const double norm = std::sqrt(sq);
    for (int k = 0; k < in; ++k) u(i, k) = scale_in * (u(i, k) / norm);
  }
  RowMat v(n, out);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, out, in, 1.0,
              u.data(), in, plda.lda.data(), out, 0.0, v.data(), out);
  std::vector<double> y(static_cast<size_t>(n) * out);
  for (int i = 0; i < n; ++i) {
    double sq = 0.0;
    for (int k = 0; k < out; ++k) {
      v(i, k) -= plda.mean2[k];
      sq += v(i, k) * v(i, k);
    }
    const double norm = std::sqrt(sq);
    for (int k = 0; k < out; ++k)
      y[static_cast<size_t>(i) * out + k] = scale_out * (v(i, k) / norm);
  }
  return y;
}

std::vector<double> PldaTransform(const PldaModel& plda,
                                  std::span<const double> xvec, int n) {
  const int d = plda.lda_dim;
  const Eigen::Map<const RowMat> tr(plda.plda_tr.data(), d, d);
  const Eigen::Map<const RowMat> x(xvec.data(), n, d);
  const Eigen::Map<const Eigen::RowVectorXd> mu(plda.mu.data(), d);
  RowMat centered = x.rowwise() - mu;
  std::vector<double> fea(static_cast<size_t>(n) * d);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, d, d, 1.0,
              centered.data(), d, plda.plda_tr.data(), d, 0.0, fea.data(), d);
  return fea;
}

}  // namespace diarization::pipeline
