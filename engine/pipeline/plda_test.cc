#include "engine/pipeline/plda.h"

#include <cmath>
#include <eigen3/Eigen/Dense>
#include <fstream>
#include <iterator>

#include "engine/common/sha256.h"
#include "engine/io/npy.h"
#include "engine/io/plda_files.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

std::string PldaDir() {
  return diarization::testing::SharedModelsDir() + "/community-1-plda";
}

double MaxRel(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// pyannote-ggml's PLDA validation vectors (10 embeddings through pyannote's
// xvec_tf and plda_tf): an independent recording of the same transform.
TEST(PldaTest, ReproducesPyannoteGgmlValidationVectors) {
  auto plda = io::LoadPlda(PldaDir());
  ASSERT_TRUE(plda.ok()) << plda.status();
  const std::string npz = diarization::testing::TestDataDir() +
                          "/pyannote-ggml/plda_validation.npz";
  auto emb = io::ReadNpzMember(npz, "test_embeddings");
  auto xvec = io::ReadNpzMember(npz, "xvec_transform_output");
  auto fea = io::ReadNpzMember(npz, "plda_transform_output");
  ASSERT_TRUE(emb.ok()) << emb.status();
  ASSERT_TRUE(xvec.ok()) << xvec.status();
  ASSERT_TRUE(fea.ok()) << fea.status();
  const int n = static_cast<int>(emb->shape[0]);
  const auto y = XvecTransform(*plda, emb->ToFloat(), n);
  EXPECT_LE(MaxRel(y, xvec->ToDouble()), 1e-9);
  EXPECT_LE(MaxRel(PldaTransform(*plda, y, n), fea->ToDouble()), 1e-9);
  EXPECT_EQ(plda->sha256.size(), 64u);
}

TEST(PldaTest, EigenSolutionIsTheGeneralizedEigenproblemOfTheFile) {
  auto plda_npz = io::ReadNpzFile(PldaDir() + "/plda.npz");
  ASSERT_TRUE(plda_npz.ok());
  const auto tr = plda_npz->at("tr").ToDouble();
  const auto psi = plda_npz->at("psi").ToDouble();
  auto plda = io::LoadPlda(PldaDir());
  ASSERT_TRUE(plda.ok());
  const int d = 128;
  using RowMat =
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMat> t(tr.data(), d, d);
  const Eigen::MatrixXd w = (t.transpose() * t).inverse();
  const Eigen::MatrixXd b = (t.transpose() *
                             Eigen::Map<const Eigen::VectorXd>(psi.data(), d)
                                 .cwiseInverse()
                                 .asDiagonal() *
                             t)
                                .inverse();
  const Eigen::Map<const RowMat> v(plda->plda_tr.data(), d,
                                   d);  // rows = eigenvectors
  // Vᵀ W V = I and B v_j = φ_j W v_j; φ descending; here φ = psi (spec §7.4).
  EXPECT_LE((v * w * v.transpose() - Eigen::MatrixXd::Identity(d, d))
                .cwiseAbs()
                .maxCoeff(),
            1e-9);
  for (int j = 0; j < d; ++j) {
    const Eigen::VectorXd vj = v.row(j).transpose();
    EXPECT_LE((b * vj - plda->phi[j] * (w * vj)).norm() / (b * vj).norm(),
              1e-9);
    if (j > 0) EXPECT_GE(plda->phi[j - 1], plda->phi[j]);
  }
  std::vector<double> sorted_psi = psi;
  std::sort(sorted_psi.rbegin(), sorted_psi.rend());
  EXPECT_LE(MaxRel(plda->phi, sorted_psi), 1e-12);
}

TEST(PldaTest, WithoutReferenceOnlyEigenvectorSignsDiffer) {
  auto with = io::LoadPlda(PldaDir());
  ASSERT_TRUE(with.ok());
  auto without =
      BuildPlda(with->mean1, with->mean2, with->lda, with->mu,
                io::ReadNpzFile(PldaDir() + "/plda.npz")->at("tr").ToDouble(),
                io::ReadNpzFile(PldaDir() + "/plda.npz")->at("psi").ToDouble());
  ASSERT_TRUE(without.ok()) << without.status();
  for (int j = 0; j < 128; ++j) {
    double dot = 0, na = 0, nb = 0;
    for (int k = 0; k < 128; ++k) {
      const double a = with->plda_tr[j * 128 + k],
                   b = without->plda_tr[j * 128 + k];
      dot += a * b;
      na += a * a;
      nb += b * b;
    }
    EXPECT_NEAR(std::abs(dot) / std::sqrt(na * nb), 1.0, 1e-9) << j;
    EXPECT_NEAR(with->phi[j], without->phi[j], 1e-12 * with->phi[0]);
  }
}

TEST(PldaTest, Sha256IsTheFilesDigest) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(PldaTest, MissingOrBrokenFilesAreErrors) {
  EXPECT_FALSE(io::LoadPlda("/nonexistent").ok());
  EXPECT_FALSE(
      BuildPlda({1, 2}, {1}, {1, 2}, {1}, {1}, {-1.0}).ok());     // psi <= 0
  EXPECT_FALSE(BuildPlda({1, 2}, {1}, {1}, {1}, {1}, {1}).ok());  // lda size
}

}  // namespace
}  // namespace diarization::pipeline
