#include "engine/pipeline/stable_labels.h"

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

using Labels = std::vector<std::string>;

// Speaker k's voice: basis vector e_k plus a little of e_(k+100), so
// successive results of one speaker differ a little.
std::vector<float> Voice(int k, double drift = 0.0) {
  std::vector<float> v(256, 0.0f);
  v[k] = 1.0f;
  v[k + 100] = static_cast<float>(drift);
  return v;
}

TEST(StableLabelsTest, FirstResultKeepsPyannotesNumbering) {
  StableLabels s;
  EXPECT_EQ(s.Next({Voice(0), Voice(1), Voice(2)}),
            (Labels{"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"}));
}

TEST(StableLabelsTest, PermutedClustersKeepTheirLabels) {
  StableLabels s;
  ASSERT_EQ(s.Next({Voice(0), Voice(1), Voice(2)}),
            (Labels{"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"}));
  // The next clustering numbers them in another order (and they drifted).
  EXPECT_EQ(s.Next({Voice(2, 0.2), Voice(0, 0.1), Voice(1, 0.3)}),
            (Labels{"SPEAKER_02", "SPEAKER_00", "SPEAKER_01"}));
  EXPECT_EQ(s.Next({Voice(1, 0.3), Voice(2, 0.1), Voice(0)}),
            (Labels{"SPEAKER_01", "SPEAKER_02", "SPEAKER_00"}));
  EXPECT_EQ(s.labels_used(), 3);
}

TEST(StableLabelsTest, NewSpeakerGetsAFreshLabel) {
  StableLabels s;
  s.Next({Voice(0), Voice(1)});
  EXPECT_EQ(s.Next({Voice(5), Voice(1), Voice(0)}),
            (Labels{"SPEAKER_02", "SPEAKER_01", "SPEAKER_00"}));
}

TEST(StableLabelsTest, VanishedLabelIsNotReusedByANewSpeaker) {
  StableLabels s;
  s.Next({Voice(0), Voice(1), Voice(2)});
  // Speaker 1 vanishes (merged, say).
  EXPECT_EQ(s.Next({Voice(0), Voice(2)}), (Labels{"SPEAKER_00", "SPEAKER_02"}));
  // A new speaker arrives: it gets SPEAKER_03, not the free SPEAKER_01.
  EXPECT_EQ(s.Next({Voice(7), Voice(0), Voice(2)}),
            (Labels{"SPEAKER_03", "SPEAKER_00", "SPEAKER_02"}));
}

TEST(StableLabelsTest, ASpeakerThatComesBackGetsItsLabelBack) {
  StableLabels s;
  s.Next({Voice(0), Voice(1), Voice(2)});
  s.Next({Voice(0), Voice(2)});
  EXPECT_EQ(s.Next({Voice(1, 0.2), Voice(0), Voice(2)}),
            (Labels{"SPEAKER_01", "SPEAKER_00", "SPEAKER_02"}));
}

TEST(StableLabelsTest, OneToOneWhenTwoSpeakersResembleOnePrevious) {
  StableLabels s;
  s.Next({Voice(0)});
  // A split: both halves resemble speaker 0; the closer keeps its label,
  // the other gets a new one.
  std::vector<float> far = Voice(0, 0.9);
  std::vector<float> near = Voice(0, 0.1);
  EXPECT_EQ(s.Next({far, near}), (Labels{"SPEAKER_01", "SPEAKER_00"}));
}

TEST(StableLabelsTest, DormantSpeakersAreBoundedAndLabelsStayFresh) {
  StableLabels s;
  // Every result brings two speakers never seen before (basis vectors
  // e_r and e_(r+128)), so every earlier one goes dormant.
  const int results = kMaxDormantSpeakers;  // 2 per result: twice the bound
  for (int r = 0; r < results; ++r) {
    std::vector<float> a(256, 0.0f), b(256, 0.0f);
    a[r] = 1.0f;
    b[r + 128] = 1.0f;
    const auto labels = s.Next({a, b});
    char want[2][32];
    std::snprintf(want[0], 32, "SPEAKER_%02d", 2 * r);
    std::snprintf(want[1], 32, "SPEAKER_%02d", 2 * r + 1);
    ASSERT_EQ(labels, (Labels{want[0], want[1]})) << "result " << r;
  }
  EXPECT_EQ(s.labels_used(), 2 * results);
  EXPECT_EQ(s.speakers_remembered(), 2 + kMaxDormantSpeakers);
  // The most recent dormant speaker is still remembered.
  std::vector<float> recent(256, 0.0f);
  recent[results - 2] = 1.0f;
  const auto labels = s.Next({recent});
  char want[32];
  std::snprintf(want, 32, "SPEAKER_%02d", 2 * (results - 2));
  EXPECT_EQ(labels, Labels{want});
  // The first speaker was forgotten: it gets a fresh label, not its old
  // SPEAKER_00 and not a vanished one's.
  std::vector<float> first(256, 0.0f);
  first[0] = 1.0f;
  char fresh[32];
  std::snprintf(fresh, 32, "SPEAKER_%02d", 2 * results);
  EXPECT_EQ(s.Next({first}), Labels{fresh});
}

TEST(StableLabelsTest, ZeroCentroidAlwaysGetsAFreshLabel) {
  StableLabels s;
  const std::vector<float> zero(256, 0.0f);
  EXPECT_EQ(s.Next({Voice(0), zero}), (Labels{"SPEAKER_00", "SPEAKER_01"}));
  EXPECT_EQ(s.Next({zero, Voice(0)}), (Labels{"SPEAKER_02", "SPEAKER_00"}));
}

// pyannote gives an all-zero centroid to a speaker with no clean embedding;
// such a speaker keeps its label through the turns it shares with the
// previous result's speaker (a result covers the audio so far).
TEST(StableLabelsTest, ZeroCentroidKeepsItsLabelByOverlappingSpeech) {
  StableLabels s;
  const std::vector<float> zero(256, 0.0f);
  using Speech = StableLabels::Speech;
  EXPECT_EQ(s.Next({Voice(0), zero}, {Speech{{0, 4}}, Speech{{4, 6}}}),
            (Labels{"SPEAKER_00", "SPEAKER_01"}));
  // Reordered, the zero speaker's turn grown: it keeps SPEAKER_01.
  EXPECT_EQ(s.Next({zero, Voice(0)}, {Speech{{4, 7}}, Speech{{0, 4}, {7, 9}}}),
            (Labels{"SPEAKER_01", "SPEAKER_00"}));
  // No overlap with any previous speaker's turns: a fresh label.
  EXPECT_EQ(s.Next({Voice(0), zero}, {Speech{{0, 4}}, Speech{{10, 11}}}),
            (Labels{"SPEAKER_00", "SPEAKER_02"}));
}

TEST(StableLabelsTest, ZeroCentroidsMatchOneToOneAndNeverTakeAMatchedLabel) {
  StableLabels s;
  const std::vector<float> zero(256, 0.0f);
  using Speech = StableLabels::Speech;
  ASSERT_EQ(s.Next({Voice(0), zero, zero},
                   {Speech{{0, 2}}, Speech{{2, 4}}, Speech{{4, 6}}}),
            (Labels{"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"}));
  // Both zero speakers overlap SPEAKER_01's turn a little, but the second
  // overlaps SPEAKER_02's more: each gets the one it shares most with, and
  // neither takes SPEAKER_00, which its centroid kept, although the first
  // one's turn overlaps SPEAKER_00's most.
  EXPECT_EQ(s.Next({zero, zero, Voice(0)},
                   {Speech{{0, 3}}, Speech{{3.5, 6}}, Speech{{0, 2}}}),
            (Labels{"SPEAKER_01", "SPEAKER_02", "SPEAKER_00"}));
}

}  // namespace
}  // namespace diarization::pipeline
