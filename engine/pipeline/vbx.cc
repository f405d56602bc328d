#include "engine/pipeline/vbx.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <eigen3/Eigen/Dense>
#include <limits>

namespace diarization::pipeline {
namespace {

using RowMat =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// scipy.special.logsumexp of a row: max + log(Σ exp(v − max)).
double LogSumExp(const double* v, int s) {
  double m = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < s; ++k) m = std::max(m, v[k]);
  if (!std::isfinite(m)) return m;
  double sum = 0.0;
  for (int k = 0; k < s; ++k) sum += std::exp(v[k] - m);
  return std::log(sum) + m;
}

// BUT VBx forward_backward: returns log p(X), fills gamma, lfw, lbw.
double ForwardBackward(const RowMat& lls, const RowMat& tr,
                       const Eigen::VectorXd& ip, RowMat& gamma, RowMat& lfw,
                       RowMat& lbw) {
  constexpr double kEps = 1e-8;
  const int n = static_cast<int>(lls.rows()), s = static_cast<int>(lls.cols());
  const RowMat ltr = (tr.array() + kEps).log().matrix();
  lfw.resize(n, s);
  lbw.resize(n, s);
  std::vector<double> tmp(s);
  for (int k = 0; k < s; ++k) lfw(0, k) = lls(0, k) + std::log(ip[k] + kEps);
  for (int i = 1; i < n; ++i) {
    for (int k = 0; k < s; ++k) {
      for (int j = 0; j < s; ++j) tmp[j] = lfw(i - 1, j) + ltr(j, k);
      lfw(i, k) = lls(i, k) + LogSumExp(tmp.data(), s);
    }
  }
  for (int k = 0; k < s; ++k) lbw(n - 1, k) = 0.0;
  for (int i = n - 2; i >= 0; --i) {
    for (int k = 0; k < s; ++k) {
      for (int j = 0; j < s; ++j)
        tmp[j] = ltr(k, j) + lls(i + 1, j) + lbw(i + 1, j);
      lbw(i, k) = LogSumExp(tmp.data(), s);
    }
  }
  const double tll = LogSumExp(&lfw(n - 1, 0), s);
  gamma = ((lfw + lbw).array() - tll).exp().matrix();
  return tll;
}

}  // namespace

VbxResult Vbx(std::span<const double> x_data, int n, int d,
              std::span<const double> phi_data, std::vector<double> gamma_init,
              int num_speakers, const VbxOptions& options) {
  const int s = num_speakers;
  const Eigen::Map<const RowMat> x(x_data.data(), n, d);
  const Eigen::Map<const Eigen::RowVectorXd> phi(phi_data.data(), d);
  RowMat gamma = Eigen::Map<RowMat>(gamma_init.data(), n, s);
  Eigen::VectorXd pi = Eigen::VectorXd::Constant(s, 1.0 / s);

  // G_n = −½(‖x_n‖² + D ln 2π); ρ = X·diag(√Φ).
  const double log2pi = std::log(2.0 * M_PI);
  Eigen::VectorXd g(n);
  for (int i = 0; i < n; ++i)
    g[i] = -0.5 * (x.row(i).squaredNorm() + d * log2pi);
  const Eigen::RowVectorXd v = phi.array().sqrt().matrix();
  const RowMat rho = x.array().rowwise() * v.array();
  const double ratio = options.fa / options.fb;

  VbxResult result;
  RowMat log_p(n, s), invl(s, d), alpha(s, d);
  for (int ii = 0; ii < options.max_iters; ++ii) {
    const Eigen::RowVectorXd counts = gamma.colwise().sum();
    for (int k = 0; k < s; ++k) {
      invl.row(k) =
          (1.0 + (ratio * counts[k]) * phi.array()).inverse().matrix();
    }
    // γᵀρ and ραᵀ through OpenBLAS (run-time CPU kernels): the two
    // products are nearly all of VBx's time on long inputs.
    RowMat gr(s, d);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, n, 1.0,
                gamma.data(), s, rho.data(), d, 0.0, gr.data(), d);
    alpha = ratio * invl.cwiseProduct(gr);
    // log_p = Fa·(ρ αᵀ − ½ (invL + α²)Φ + G)
    const Eigen::VectorXd quad = (invl + alpha.cwiseAbs2()) * phi.transpose();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, s, d, 1.0,
                rho.data(), d, alpha.data(), d, 0.0, log_p.data(), s);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < s; ++k) {
        log_p(i, k) = options.fa * (log_p(i, k) - 0.5 * quad[k] + g[i]);
      }
    }
    double log_px = 0.0;
    if (!options.hmm && options.loop_prob <= 0.0) {
      // pyannote: GMM update.
      constexpr double kEps = 1e-8;
      Eigen::VectorXd lpi(s);
      for (int k = 0; k < s; ++k) lpi[k] = std::log(pi[k] + kEps);
      std::vector<double> row(s);
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < s; ++k) row[k] = log_p(i, k) + lpi[k];
        const double lpx = LogSumExp(row.data(), s);
        log_px += lpx;
        for (int k = 0; k < s; ++k)
          gamma(i, k) = std::exp(log_p(i, k) + lpi[k] - lpx);
      }
      pi = gamma.colwise().sum().transpose();
      pi /= pi.sum();
    } else {
      // BUT VB-HMM: transition = loopP·I + (1 − loopP)·π (rows), (24) for π.
      const double lp = options.loop_prob;
      RowMat tr = RowMat::Identity(s, s) * lp;
      for (int r = 0; r < s; ++r) {
        for (int k = 0; k < s; ++k) tr(r, k) += (1.0 - lp) * pi[k];
      }
      RowMat lfw, lbw;
      log_px = ForwardBackward(log_p, tr, pi, gamma, lfw, lbw);
      Eigen::VectorXd acc = Eigen::VectorXd::Zero(s);
      std::vector<double> tmp(s);
      for (int i = 0; i + 1 < n; ++i) {
        const double lse = LogSumExp(&lfw(i, 0), s);
        for (int k = 0; k < s; ++k) {
          acc[k] += std::exp(lse + log_p(i + 1, k) + lbw(i + 1, k) - log_px);
        }
      }
      Eigen::VectorXd new_pi(s);
      for (int k = 0; k < s; ++k)
        new_pi[k] = gamma(0, k) + (1.0 - lp) * pi[k] * acc[k];
      pi = new_pi / new_pi.sum();
    }
    const double elbo = log_px + options.fb * 0.5 *
                                     (invl.array().log() - invl.array() -
                                      alpha.array().square() + 1.0)
                                         .sum();
    result.elbo.push_back(elbo);
    if (ii > 0 && elbo - result.elbo[ii - 1] < options.epsilon) break;
  }
  result.gamma.resize(static_cast<size_t>(n) * s);
  Eigen::Map<RowMat>(result.gamma.data(), n, s) = gamma;
  result.pi.assign(pi.data(), pi.data() + s);
  return result;
}

std::vector<double> VbxInitialGamma(std::span<const int> labels,
                                    double smoothing) {
  const int n = static_cast<int>(labels.size());
  int s = 0;
  for (int l : labels) s = std::max(s, l + 1);
  std::vector<double> q(static_cast<size_t>(n) * s, 0.0);
  for (int i = 0; i < n; ++i) {
    double* row = q.data() + static_cast<size_t>(i) * s;
    row[labels[i]] = 1.0;
    if (smoothing < 0) continue;
    // scipy.special.softmax: exp(x − max) / Σ.
    double m = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < s; ++k) {
      row[k] *= smoothing;
      m = std::max(m, row[k]);
    }
    double sum = 0.0;
    for (int k = 0; k < s; ++k) {
      row[k] = std::exp(row[k] - m);
      sum += row[k];
    }
    for (int k = 0; k < s; ++k) row[k] /= sum;
  }
  return q;
}

VbxResult ClusterVbx(std::span<const int> ahc_labels,
                     std::span<const double> fea, int d,
                     std::span<const double> phi, const VbxOptions& options,
                     double init_smoothing) {
  const int n = static_cast<int>(ahc_labels.size());
  int s = 0;
  for (int l : ahc_labels) s = std::max(s, l + 1);
  return Vbx(fea, n, d, phi, VbxInitialGamma(ahc_labels, init_smoothing), s,
             options);
}

}  // namespace diarization::pipeline
