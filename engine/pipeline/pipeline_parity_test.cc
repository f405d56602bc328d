// End-to-end parity of the host pipeline with pyannote community-1: from
// pyannote's recorded segmentations and raw embeddings, every recorded
// intermediate and the final RTTM (../shared/specs/fixtures.md).
//
// Tolerances: integers, labels, discrete diarization and RTTM text are exact.
// PLDA features ≤ 1e-9 relative (pyannote's BLAS GEMMs sum in another order
// than Eigen: ~1e-13 is expected). VBx γ and π ≤ 1e-6 absolute (they carry
// the features' rounding through 2–16 iterations; ~1e-14 is expected).
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/eval/der.h"
#include "engine/io/fixture.h"
#include "engine/io/npy.h"
#include "engine/io/plda_files.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

std::string Findit(const std::string& name) {
  return diarization::testing::TestDataDir() + "/findit-dia-parity/" + name;
}
std::string Speakrs() {
  return diarization::testing::TestDataDir() + "/speakrs-fixtures";
}

const PldaModel& Plda() {
  static const PldaModel* model = [] {
    auto m = io::LoadPlda(diarization::testing::SharedModelsDir() +
                          "/community-1-plda");
    if (!m.ok()) {
      ADD_FAILURE() << m.status();
      return new PldaModel();
    }
    return new PldaModel(*std::move(m));
  }();
  return *model;
}

io::NpyArray Npz(const std::string& path, const std::string& key) {
  auto a = io::ReadNpzMember(path, key);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : io::NpyArray{};
}
io::NpyArray Npy(const std::string& path) {
  auto a = io::ReadNpyFile(path);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : io::NpyArray{};
}
std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

double MaxRelDiff(const std::vector<double>& got,
                  const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? diff / scale : diff;
}
double MaxAbsDiff(const std::vector<double>& got,
                  const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0.0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
  }
  return diff;
}
template <typename T>
std::vector<int64_t> AsInt64(const std::vector<T>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// DER of our RTTM text (as written, rounded like pyannote's) against
// pyannote's.
void ExpectDerZero(const std::string& reference_text,
                   const std::string& hyp_text) {
  auto ref = ParseRttm(reference_text);
  ASSERT_TRUE(ref.ok()) << ref.status();
  auto hyp = ParseRttm(hyp_text);
  ASSERT_TRUE(hyp.ok()) << hyp.status();
  ASSERT_EQ(hyp->size(), ref->size());
  auto der = eval::ComputeDer(*ref, *hyp);
  ASSERT_TRUE(der.ok()) << der.status();
  EXPECT_EQ(der->der(), 0.0);
}

class FinditParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FinditParityTest, ReproducesEveryIntermediateAndTheRttm) {
  const std::string dir = Findit(GetParam());
  auto in = io::LoadFinditFixture(dir);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->uri, "clip_16k");
  auto run = DiarizeDetailed(in->segmentations, in->embeddings, in->num_windows,
                             Plda(), PipelineConfig::Accurate(), SpeakerHints{},
                             in->uri);
  ASSERT_TRUE(run.ok()) << run.status();
  const ClusteringResult& cl = run->clustering;

  // §4 count.
  EXPECT_EQ(AsInt64(run->count),
            Npz(dir + "/reconstruction.npz", "count").ToInt64());
  // §7.1 training subset.
  const std::string plda_npz = dir + "/plda_embeddings.npz";
  EXPECT_EQ(AsInt64(cl.train.window_idx),
            Npz(plda_npz, "train_chunk_idx").ToInt64());
  EXPECT_EQ(AsInt64(cl.train.speaker_idx),
            Npz(plda_npz, "train_speaker_idx").ToInt64());
  // §7.3 AHC.
  EXPECT_EQ(AsInt64(cl.ahc_labels),
            Npy(dir + "/ahc_init_labels.npy").ToInt64());
  // §7.4 PLDA.
  const double xvec_diff =
      MaxRelDiff(cl.xvec, Npz(plda_npz, "post_xvec").ToDouble());
  const double plda_diff =
      MaxRelDiff(cl.plda_features, Npz(plda_npz, "post_plda").ToDouble());
  EXPECT_LE(xvec_diff, 1e-9);
  EXPECT_LE(plda_diff, 1e-9);
  EXPECT_LE(MaxRelDiff(Plda().phi, Npz(plda_npz, "phi").ToDouble()), 1e-9);
  // §7.5 VBx.
  const std::string vbx_npz = dir + "/vbx_state.npz";
  EXPECT_LE(MaxAbsDiff(VbxInitialGamma(cl.ahc_labels, 7.0),
                       Npz(vbx_npz, "qinit").ToDouble()),
            1e-15);
  const double gamma_diff =
      MaxAbsDiff(cl.vbx.gamma, Npz(vbx_npz, "q_final").ToDouble());
  const double pi_diff =
      MaxAbsDiff(cl.vbx.pi, Npz(vbx_npz, "sp_final").ToDouble());
  EXPECT_LE(gamma_diff, 1e-6);
  EXPECT_LE(pi_diff, 1e-6);
  std::cout << GetParam() << ": post_xvec rel " << xvec_diff
            << ", post_plda rel " << plda_diff << ", gamma abs " << gamma_diff
            << ", pi abs " << pi_diff << ", VBx iterations "
            << cl.vbx.elbo.size() << ", K " << cl.num_clusters << "\n";
  const std::vector<double> elbo = Npz(vbx_npz, "elbo_trajectory").ToDouble();
  EXPECT_EQ(cl.vbx.elbo.size(), elbo.size());
  EXPECT_LE(MaxRelDiff(cl.vbx.elbo, elbo), 1e-9);
  // §7.6, §7.8 centroids and assignment.
  const std::string cl_npz = dir + "/clustering.npz";
  EXPECT_LE(MaxRelDiff(cl.centroids, Npz(cl_npz, "centroids").ToDouble()),
            1e-9);
  EXPECT_LE(MaxAbsDiff(cl.soft, Npz(cl_npz, "soft_clusters").ToDouble()), 1e-9);
  EXPECT_EQ(AsInt64(cl.hard), Npz(cl_npz, "hard_clusters").ToInt64());
  // §9 discrete diarization.
  const io::NpyArray discrete =
      Npz(dir + "/reconstruction.npz", "discrete_diarization");
  ASSERT_EQ(discrete.shape.size(), 2u);
  EXPECT_EQ(run->discrete.num_frames, discrete.shape[0]);
  EXPECT_EQ(run->discrete.num_speakers, discrete.shape[1]);
  EXPECT_TRUE(run->discrete.data == discrete.ToFloat())
      << "discrete diarization differs";
  // §11–12 RTTM, exact text; DER 0.
  const std::string reference = ReadText(dir + "/reference.rttm");
  const std::string rttm = FormatRttm(run->output.segments, in->uri, 3);
  EXPECT_EQ(rttm, reference);
  ExpectDerZero(reference, rttm);
}

INSTANTIATE_TEST_SUITE_P(AllClips, FinditParityTest,
                         ::testing::Values("01_dialogue", "02_pyannote_sample",
                                           "03_dual_speaker",
                                           "04_three_speaker",
                                           "05_four_speaker"));

class SpeakrsParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeakrsParityTest, ReproducesCountDiscreteAndRttm) {
  const std::string p = GetParam();
  const std::string base = Speakrs() + "/" + p;
  auto in = io::LoadSpeakrsScenario(Speakrs(), p);
  ASSERT_TRUE(in.ok()) << in.status();
  auto run =
      DiarizeDetailed(in->segmentations, in->embeddings, in->num_windows,
                      Plda(), PipelineConfig::Accurate(), SpeakerHints{}, p);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(AsInt64(run->count),
            Npy(base + "_speaker_counting_data.npy").ToInt64());
  const io::NpyArray discrete = Npy(base + "_discrete_diarization_data.npy");
  ASSERT_EQ(discrete.shape.size(), 2u);
  EXPECT_EQ(run->discrete.num_frames, discrete.shape[0]);
  EXPECT_EQ(run->discrete.num_speakers, discrete.shape[1]);
  EXPECT_TRUE(run->discrete.data == discrete.ToFloat())
      << "discrete diarization differs";
  const std::string reference = ReadText(base + "_expected.rttm");
  const std::string rttm = FormatRttm(run->output.segments, p, 6);
  EXPECT_EQ(rttm, reference);
  ExpectDerZero(reference, rttm);
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, SpeakrsParityTest,
                         ::testing::Values("pipeline", "3speakers",
                                           "single_speaker", "short"));

TEST(SpeakrsPipelineChainTest, ReproducesTrainAhcPldaVbxAndHardClusters) {
  const std::string base = Speakrs() + "/pipeline";
  auto in = io::LoadSpeakrsScenario(Speakrs(), "pipeline");
  ASSERT_TRUE(in.ok()) << in.status();
  auto run = DiarizeDetailed(in->segmentations, in->embeddings, in->num_windows,
                             Plda(), PipelineConfig::Accurate(), SpeakerHints{},
                             "pipeline");
  ASSERT_TRUE(run.ok()) << run.status();
  const ClusteringResult& cl = run->clustering;
  EXPECT_EQ(AsInt64(cl.train.window_idx),
            Npy(base + "_train_chunk_idx.npy").ToInt64());
  EXPECT_EQ(AsInt64(cl.train.speaker_idx),
            Npy(base + "_train_speaker_idx.npy").ToInt64());
  EXPECT_EQ(AsInt64(cl.ahc_labels), Npy(base + "_ahc_clusters.npy").ToInt64());
  EXPECT_LE(
      MaxRelDiff(cl.plda_features, Npy(base + "_plda_features.npy").ToDouble()),
      1e-9);
  EXPECT_LE(MaxRelDiff(Plda().phi, Npy(base + "_plda_phi.npy").ToDouble()),
            1e-9);
  EXPECT_LE(MaxAbsDiff(cl.vbx.gamma, Npy(base + "_vbx_gamma.npy").ToDouble()),
            1e-6);
  EXPECT_LE(MaxAbsDiff(cl.vbx.pi, Npy(base + "_vbx_pi.npy").ToDouble()), 1e-6);
  // Recorded after the pipeline's inactive → −2 override.
  EXPECT_EQ(AsInt64(run->hard), Npy(base + "_hard_clusters.npy").ToInt64());
}

}  // namespace
}  // namespace diarization::pipeline
