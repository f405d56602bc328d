#include "engine/pipeline/identify.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

constexpr int kDim = 256;

// a·e_i + b·e_j: cosines against basis vectors are known by hand.
std::vector<float> Mix(int i, double a, int j = -1, double b = 0.0) {
  std::vector<float> v(kDim, 0.0f);
  v[i] += static_cast<float>(a);
  if (j >= 0) v[j] += static_cast<float>(b);
  return v;
}

TEST(CosineSimilarityTest, HandComputedValues) {
  EXPECT_NEAR(*CosineSimilarity(Mix(0, 1), Mix(0, 3)), 1.0, 1e-12);
  EXPECT_NEAR(*CosineSimilarity(Mix(0, 1), Mix(1, 1)), 0.0, 1e-12);
  EXPECT_NEAR(*CosineSimilarity(Mix(0, 1), Mix(0, -2)), -1.0, 1e-12);
  // (1, 1) against (1, 0): 1/sqrt(2).
  EXPECT_NEAR(*CosineSimilarity(Mix(0, 1, 1, 1), Mix(0, 1)), M_SQRT1_2, 1e-7);
  EXPECT_FALSE(
      CosineSimilarity(std::vector<float>(kDim, 0.0f), Mix(0, 1)).has_value());
  EXPECT_FALSE(
      CosineSimilarity(Mix(0, 1), std::vector<float>(3, 1.0f)).has_value());
}

TEST(IdentifySpeakersTest, EachSpeakerTakesItsOwnVoiceprint) {
  const std::vector<KnownSpeaker> known = {{"alice", Mix(1, 1)},
                                           {"bob", Mix(0, 1)}};
  // Speaker 0 is near bob (0.8 ≈ cos), speaker 1 near alice, speaker 2
  // near neither.
  const auto ids = IdentifySpeakers(
      {Mix(0, 0.8, 5, 0.6), Mix(1, 0.9, 6, std::sqrt(1 - 0.81)), Mix(7, 1)},
      known, 0.5);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0].matched_label, "bob");
  EXPECT_NEAR(ids[0].best_score, 0.8, 1e-6);
  EXPECT_EQ(ids[1].matched_label, "alice");
  EXPECT_NEAR(ids[1].best_score, 0.9, 1e-6);
  EXPECT_EQ(ids[2].matched_label, "");
  EXPECT_NEAR(ids[2].best_score, 0.0, 1e-12);
}

TEST(IdentifySpeakersTest, TwoSpeakersHighOnOneVoiceprintOnlyOneTakesIt) {
  const std::vector<KnownSpeaker> known = {{"alice", Mix(0, 1)}};
  // cos 0.8 and 0.9 against alice: the better one takes the label; the
  // other keeps alice as its best (reported) but is unmatched.
  const auto ids = IdentifySpeakers(
      {Mix(0, 0.8, 1, 0.6), Mix(0, 0.9, 2, std::sqrt(1 - 0.81))}, known, 0.5);
  EXPECT_EQ(ids[0].matched_label, "");
  EXPECT_EQ(ids[0].best_label, "alice");
  EXPECT_NEAR(ids[0].best_score, 0.8, 1e-6);
  EXPECT_EQ(ids[1].matched_label, "alice");
}

TEST(IdentifySpeakersTest, OneToOneMaximizesTheMarginsNotGreedy) {
  // alice = e0, bob = 0.8 e0 + 0.6 e1. Speaker 0 = e0: alice 1.0, bob 0.8.
  // Speaker 1 = 0.85 e0 - sqrt(1 - 0.85²) e1: alice 0.85, bob
  // 0.68 - 0.6·0.5268 = 0.364 (below 0.5). Greedy (best pair first) gives
  // 0 → alice and leaves 1 unmatched (margin sum 0.5); the assignment gives
  // 0 → bob, 1 → alice (0.3 + 0.35 = 0.65).
  const std::vector<KnownSpeaker> known = {{"alice", Mix(0, 1)},
                                           {"bob", Mix(0, 0.8, 1, 0.6)}};
  const auto ids = IdentifySpeakers(
      {Mix(0, 1), Mix(0, 0.85, 1, -std::sqrt(1 - 0.85 * 0.85))}, known, 0.5);
  EXPECT_EQ(ids[0].matched_label, "bob");
  EXPECT_EQ(ids[0].best_label, "alice");
  EXPECT_NEAR(ids[0].best_score, 1.0, 1e-6);
  EXPECT_EQ(ids[1].matched_label, "alice");
  EXPECT_NEAR(ids[1].best_score, 0.85, 1e-6);
}

TEST(IdentifySpeakersTest, ThresholdAboveTheScoreMatchesNothing) {
  const std::vector<KnownSpeaker> known = {{"alice", Mix(0, 1)}};
  const auto centroids = std::vector<std::vector<float>>{Mix(0, 0.8, 1, 0.6)};
  EXPECT_EQ(IdentifySpeakers(centroids, known, 0.79)[0].matched_label, "alice");
  const auto ids = IdentifySpeakers(centroids, known, 0.81);
  EXPECT_EQ(ids[0].matched_label, "");
  EXPECT_EQ(ids[0].best_label, "alice");
  EXPECT_NEAR(ids[0].best_score, 0.8, 1e-6);
}

TEST(IdentifySpeakersTest, PaddedSpeakerAndNoKnownSpeakers) {
  const std::vector<KnownSpeaker> known = {{"alice", Mix(0, 1)}};
  const auto ids = IdentifySpeakers({std::vector<float>(kDim, 0.0f)}, known,
                                    -1.0);  // even the lowest threshold
  EXPECT_EQ(ids[0].matched_label, "");
  EXPECT_EQ(ids[0].best_label, "");
  const auto none = IdentifySpeakers({Mix(0, 1)}, {}, 0.5);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].matched_label, "");
  EXPECT_TRUE(IdentifySpeakers({}, known, 0.5).empty());
}

TEST(IdentifySpeakersTest, MoreKnownSpeakersThanOutputSpeakers) {
  const std::vector<KnownSpeaker> known = {
      {"a", Mix(0, 1)}, {"b", Mix(1, 1)}, {"c", Mix(2, 1)}, {"d", Mix(3, 1)}};
  const auto ids = IdentifySpeakers({Mix(2, 1), Mix(3, 1, 0, 0.1)}, known, 0.5);
  EXPECT_EQ(ids[0].matched_label, "c");
  EXPECT_EQ(ids[1].matched_label, "d");
}

}  // namespace
}  // namespace diarization::pipeline
