// The facade on edge cases and bad inputs: pyannote's behaviour or a clear
// error, never a crash (parity on real recordings is pipeline_parity_test).
#include "engine/pipeline/diarization.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/openblas_threads.h"
#include "engine/io/fixture.h"
#include "engine/io/plda_files.h"
#include "engine/pipeline/clustering.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

constexpr int F = kFramesPerWindow;
constexpr int D = kEmbeddingDim;

const PldaModel& Plda() {
  static const PldaModel* m = new PldaModel(*io::LoadPlda(
      diarization::testing::SharedModelsDir() + "/community-1-plda"));
  return *m;
}

io::PipelineInputs Fixture(const std::string& name) {
  auto in = io::LoadFinditFixture(diarization::testing::TestDataDir() +
                                  "/findit-dia-parity/" + name);
  EXPECT_TRUE(in.ok()) << in.status();
  return *in;
}

TEST(DiarizationTest, NobodySpeakingGivesEmptyOutput) {
  std::vector<float> seg(3 * F * 3, 0.0f), emb(3 * 3 * D, 0.1f);
  auto out = Diarize(seg, emb, 3, Plda(), PipelineConfig{}, SpeakerHints{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->segments.empty());
  EXPECT_TRUE(out->exclusive_segments.empty());
  EXPECT_TRUE(out->labels.empty());
}

TEST(DiarizationTest, SingleWindowWithoutTrainingEmbeddingsIsOneSpeaker) {
  // A short active region: fewer than 118 clean frames, so no training
  // embedding (pyannote N < 2 path): one speaker.
  std::vector<float> seg(F * 3, 0.0f), emb(3 * D, 0.3f);
  for (int f = 100; f < 150; ++f) seg[f * 3 + 1] = 1;
  auto run = DiarizeDetailed(seg, emb, 1, Plda(), PipelineConfig{},
                             SpeakerHints{}, "x");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->clustering.train.size(), 0);
  EXPECT_EQ(run->grid.num_frames, 594);
  ASSERT_EQ(run->output.labels, std::vector<std::string>{"SPEAKER_00"});
  ASSERT_EQ(run->output.segments.size(), 1u);
  EXPECT_DOUBLE_EQ(run->output.segments[0].start_s, FrameMiddle(100));
  EXPECT_DOUBLE_EQ(run->output.segments[0].end_s, FrameMiddle(150));
  // pyannote's centroid is mean(empty) = NaN there; the output keeps it.
  EXPECT_TRUE(std::isnan(run->output.centroids[0][0]));
}

TEST(DiarizationTest, NaNEmbeddingsAreLeftOutOfTraining) {
  io::PipelineInputs in = Fixture("02_pyannote_sample");
  auto clean = DiarizeDetailed(in.segmentations, in.embeddings, in.num_windows,
                               Plda(), PipelineConfig{}, SpeakerHints{});
  ASSERT_TRUE(clean.ok());
  // NaN out one training embedding: it leaves the training set, its row
  // gets NaN scores, and the run still succeeds.
  const int c = clean->clustering.train.window_idx[3],
            s = clean->clustering.train.speaker_idx[3];
  for (int t = 0; t < D; ++t)
    in.embeddings[(c * 3 + s) * D + t] = std::nanf("");
  auto run = DiarizeDetailed(in.segmentations, in.embeddings, in.num_windows,
                             Plda(), PipelineConfig{}, SpeakerHints{});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->clustering.train.size(), clean->clustering.train.size() - 1);
  EXPECT_FALSE(run->output.segments.empty());
}

// A summary made earlier by the caller (the offline pass makes it while the
// embeddings run) gives what Diarize computes without one, intermediates
// included: pyannote's recordings, a NaN embedding and speaker hints.
TEST(DiarizationTest, ASummaryMadeEarlierGivesTheSameResult) {
  for (const char* name : {"01_dialogue", "02_pyannote_sample"}) {
    io::PipelineInputs in = Fixture(name);
    in.embeddings[(5 * 3 + 1) * D + 9] = std::nanf("");
    for (const SpeakerHints& hints :
         {SpeakerHints{}, SpeakerHints{.num_speakers = 3}}) {
      auto summary =
          SummarizeSegmentation(in.segmentations, in.num_windows, {});
      ASSERT_TRUE(summary.ok()) << summary.status();
      auto alone = DiarizeDetailed(in.segmentations, in.embeddings,
                                   in.num_windows, Plda(), {}, hints, "u");
      auto given =
          DiarizeDetailed(in.segmentations, in.embeddings, in.num_windows,
                          Plda(), {}, hints, "u", {}, &*summary);
      ASSERT_TRUE(alone.ok()) << alone.status();
      ASSERT_TRUE(given.ok()) << given.status();
      EXPECT_EQ(given->count, alone->count) << name;
      EXPECT_EQ(given->clustering.train.window_idx,
                alone->clustering.train.window_idx);
      EXPECT_EQ(given->clustering.train.speaker_idx,
                alone->clustering.train.speaker_idx);
      EXPECT_EQ(given->clustering.inactive, alone->clustering.inactive);
      EXPECT_EQ(given->hard, alone->hard) << name;
      EXPECT_EQ(given->output.labels, alone->output.labels) << name;
      EXPECT_EQ(given->output.centroids, alone->output.centroids) << name;
      EXPECT_EQ(given->output.segments, alone->output.segments) << name;
      EXPECT_EQ(given->output.exclusive_segments,
                alone->output.exclusive_segments)
          << name;
    }
  }
}

// The host passes that split over OpenBLAS's thread count (reconstruction,
// assignment, the exclusive view beside the regular one) give one thread's
// result on pyannote's recordings: the same assignments, frames and
// segments, to the bit.
TEST(DiarizationTest, OpenBlasThreadCountDoesNotChangeTheResult) {
  const int before = openblas_get_num_threads();
  for (const char* name : {"01_dialogue", "02_pyannote_sample"}) {
    const io::PipelineInputs in = Fixture(name);
    auto run = [&](int threads) {
      openblas_set_num_threads(threads);
      auto r = DiarizeDetailed(in.segmentations, in.embeddings, in.num_windows,
                               Plda(), {}, {}, "u");
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? *std::move(r) : DiarizationDetails{};
    };
    const DiarizationDetails one = run(1);
    for (int threads : {2, 4}) {
      const DiarizationDetails many = run(threads);
      EXPECT_EQ(many.discrete.data, one.discrete.data) << name << threads;
      EXPECT_EQ(many.exclusive.data, one.exclusive.data) << name << threads;
      // The soft scores come out of OpenBLAS's GEMMs (the centroids, the
      // dot products), whose last bits follow its thread count (seen on
      // 01_dialogue: one ulp-level difference); the passes split here
      // add none, and everything after the argmax is exact.
      ASSERT_EQ(many.clustering.soft.size(), one.clustering.soft.size());
      for (size_t i = 0; i < one.clustering.soft.size(); ++i) {
        ASSERT_NEAR(many.clustering.soft[i], one.clustering.soft[i], 1e-12)
            << name << threads << " entry " << i;
      }
      EXPECT_EQ(many.hard, one.hard) << name << threads;
      EXPECT_EQ(many.output.segments, one.output.segments) << name << threads;
      EXPECT_EQ(many.output.exclusive_segments, one.output.exclusive_segments)
          << name << threads;
      EXPECT_EQ(many.output.centroids, one.output.centroids) << name << threads;
    }
  }
  openblas_set_num_threads(before);
}

TEST(DiarizationTest, ASummaryOfOtherWindowsIsInvalidArgument) {
  io::PipelineInputs in = Fixture("02_pyannote_sample");
  std::vector<float> shorter(in.segmentations.begin(),
                             in.segmentations.end() - F * 3);
  auto summary = SummarizeSegmentation(shorter, in.num_windows - 1, {});
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto run = Diarize(in.segmentations, in.embeddings, in.num_windows, Plda(),
                     {}, {}, {}, &*summary);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("summary"), std::string::npos)
      << run.status();
}

TEST(DiarizationTest, ContradictoryOrInvalidHintsAreInvalidArgument) {
  const io::PipelineInputs in = Fixture("02_pyannote_sample");
  auto run = [&](SpeakerHints h) {
    return Diarize(in.segmentations, in.embeddings, in.num_windows, Plda(),
                   PipelineConfig{}, h);
  };
  EXPECT_EQ(run({0, 3, 2}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({-1, 0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // More speakers than training embeddings: sklearn would raise.
  EXPECT_EQ(run({100, 0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // num_speakers overrides min/max (pyannote): not contradictory.
  EXPECT_TRUE(run({2, 5, 1}).ok());
}

// The one hint rule (the engine applies it at submission too): one message
// naming the three values; num_speakers overrides min/max as in pyannote.
TEST(DiarizationTest, OneSpeakerHintRuleWithOneMessage) {
  for (const SpeakerHints& h : std::vector<SpeakerHints>{
           {0, 3, 2}, {-1, 0, 0}, {0, -2, 0}, {0, 0, -1}, {2, -1, 0}}) {
    const absl::StatusOr<ResolvedHints> r = ResolveHints(h);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              absl::StrCat("speaker hints num_speakers=", h.num_speakers,
                           " min_speakers=", h.min_speakers,
                           " max_speakers=", h.max_speakers,
                           ": each must be 0 (unset) or positive, and "
                           "min_speakers <= max_speakers unless num_speakers "
                           "is set"));
  }
  const absl::StatusOr<ResolvedHints> num = ResolveHints({2, 5, 1});
  ASSERT_TRUE(num.ok()) << num.status();
  EXPECT_EQ(num->num, 2);
  EXPECT_EQ(num->min, 2);
  EXPECT_EQ(num->max, 2);
  const absl::StatusOr<ResolvedHints> none = ResolveHints({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->num, 0);
  EXPECT_EQ(none->min, 1);
  EXPECT_EQ(none->max, 0);
  const absl::StatusOr<ResolvedHints> equal = ResolveHints({0, 3, 3});
  ASSERT_TRUE(equal.ok());
  EXPECT_EQ(equal->num, 3);  // min == max fixes the count
}

TEST(DiarizationTest, HintsFollowPyannoteSemantics) {
  const io::PipelineInputs in = Fixture("02_pyannote_sample");  // VBx finds 2
  auto run = [&](SpeakerHints h) {
    auto r = DiarizeDetailed(in.segmentations, in.embeddings, in.num_windows,
                             Plda(), PipelineConfig{}, h);
    EXPECT_TRUE(r.ok()) << r.status();
    return *std::move(r);
  };
  EXPECT_FALSE(run({2, 0, 0}).clustering.kmeans);  // num == VBx's K: no KMeans
  EXPECT_FALSE(run({0, 1, 3}).clustering.kmeans);  // K within bounds
  auto three = run({0, 3, 0});                     // K < min → KMeans(3)
  EXPECT_TRUE(three.clustering.kmeans);
  EXPECT_EQ(three.clustering.num_clusters, 3);
  auto one = run({0, 0, 1});  // K > max → KMeans(1), count ≤ 1
  EXPECT_TRUE(one.clustering.kmeans);
  EXPECT_EQ(one.output.labels.size(), 1u);
  for (float v : one.discrete.data) EXPECT_LE(v, 1.0f);
}

TEST(DiarizationTest, ShapeAndValueErrorsAreInvalidArgument) {
  const io::PipelineInputs in = Fixture("04_three_speaker");
  const PipelineConfig c;
  EXPECT_EQ(Diarize(in.segmentations, in.embeddings, in.num_windows + 1, Plda(),
                    c, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Diarize(in.segmentations, std::span<const float>(in.embeddings).first(10),
              in.num_windows, Plda(), c, {})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Diarize({}, {}, 0, Plda(), c, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> soft = in.segmentations;
  soft[5] = 0.5f;
  EXPECT_EQ(Diarize(soft, in.embeddings, in.num_windows, Plda(), c, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Diarize(in.segmentations, in.embeddings, in.num_windows,
                    PldaModel{}, c, {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(DiarizationTest, FastModeUsesTheTwoSecondGrid) {
  // Every other window of a 1 s fixture is a 2 s-step input by construction.
  const io::PipelineInputs in = Fixture("03_dual_speaker");
  std::vector<float> seg, emb;
  int windows = 0;
  for (int c = 0; c < in.num_windows; c += 2, ++windows) {
    seg.insert(seg.end(), in.segmentations.begin() + c * F * 3,
               in.segmentations.begin() + (c + 1) * F * 3);
    emb.insert(emb.end(), in.embeddings.begin() + c * 3 * D,
               in.embeddings.begin() + (c + 1) * 3 * D);
  }
  auto run = DiarizeDetailed(seg, emb, windows, Plda(), PipelineConfig::Fast(),
                             SpeakerHints{});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->grid.window_offset[1], 119);  // rint(2 / 0.016875)
  EXPECT_EQ(run->grid.num_frames,
            ComputeFrameGrid(2 * windows - 1, 1.0).num_frames);
  EXPECT_FALSE(run->output.segments.empty());
}

}  // namespace
}  // namespace diarization::pipeline
