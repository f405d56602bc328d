#include "engine/pipeline/stable_labels.h"

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

TEST(StableLabelsTest, ZeroCentroidAlwaysGetsAFreshLabel) {
  StableLabels s;
  const std::vector<float> zero(256, 0.0f);
  EXPECT_EQ(s.Next({Voice(0), zero}), (Labels{"SPEAKER_00", "SPEAKER_01"}));
  EXPECT_EQ(s.Next({zero, Voice(0)}), (Labels{"SPEAKER_02", "SPEAKER_00"}));
}

}  // namespace
}  // namespace diarization::pipeline
