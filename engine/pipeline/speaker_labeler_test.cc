#include "engine/pipeline/speaker_labeler.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

std::vector<float> Voice(int k, double drift = 0.0) {
  std::vector<float> v(256, 0.0f);
  v[k] = 1.0f;
  v[k + 100] = static_cast<float>(drift);
  return v;
}

std::vector<Segment> Turns(const std::vector<std::string>& speakers) {
  std::vector<Segment> out;
  for (size_t i = 0; i < speakers.size(); ++i) {
    out.push_back({static_cast<double>(i), i + 0.5, speakers[i], "f"});
  }
  return out;
}

std::vector<std::string> Speakers(const std::vector<Segment>& segments) {
  std::vector<std::string> out;
  for (const Segment& s : segments) out.push_back(s.speaker);
  return out;
}

TEST(SpeakerLabelerTest, WithoutKnownSpeakersOrTrackingNothingMoves) {
  SpeakerLabeler labeler({}, 0.5, false);
  std::vector<Segment> regular = Turns({"SPEAKER_00", "SPEAKER_01"});
  std::vector<Segment> exclusive = Turns({"SPEAKER_01"});
  const auto before = regular;
  const auto out = labeler.Apply({"SPEAKER_00", "SPEAKER_01"},
                                 {Voice(0), Voice(1)}, {&regular, &exclusive});
  EXPECT_EQ(regular, before);
  EXPECT_EQ(Speakers(exclusive), std::vector<std::string>{"SPEAKER_01"});
  EXPECT_EQ(out[0].label, "SPEAKER_00");
  EXPECT_EQ(out[1].label, "SPEAKER_01");
}

TEST(SpeakerLabelerTest, KnownLabelReplacesPyannotesInEveryView) {
  SpeakerLabeler labeler({{"alice", Voice(1)}}, 0.5, false);
  std::vector<Segment> regular = Turns({"SPEAKER_00", "SPEAKER_01"});
  std::vector<Segment> exclusive = Turns({"SPEAKER_01", "SPEAKER_00"});
  const auto out =
      labeler.Apply({"SPEAKER_00", "SPEAKER_01"}, {Voice(0), Voice(1, 0.1)},
                    {&regular, &exclusive});
  EXPECT_EQ(Speakers(regular),
            (std::vector<std::string>{"SPEAKER_00", "alice"}));
  EXPECT_EQ(Speakers(exclusive),
            (std::vector<std::string>{"alice", "SPEAKER_00"}));
  EXPECT_EQ(out[1].label, "alice");
  EXPECT_EQ(out[1].identity.matched_label, "alice");
  EXPECT_EQ(out[0].identity.best_label, "alice");
  EXPECT_EQ(out[0].identity.matched_label, "");
}

TEST(SpeakerLabelerTest, StreamLabelsStableAndKnownSpeakersWin) {
  SpeakerLabeler labeler({{"alice", Voice(2)}}, 0.5, true);
  // Partial 1: two speakers.
  std::vector<Segment> p1 = Turns({"SPEAKER_00", "SPEAKER_01"});
  labeler.Apply({"SPEAKER_00", "SPEAKER_01"}, {Voice(0), Voice(1)}, {&p1});
  EXPECT_EQ(Speakers(p1),
            (std::vector<std::string>{"SPEAKER_00", "SPEAKER_01"}));
  // Partial 2: re-clustered in the other order, and alice appears (as
  // pyannote's SPEAKER_01).
  std::vector<Segment> p2 = Turns({"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"});
  labeler.Apply({"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"},
                {Voice(1, 0.1), Voice(2), Voice(0, 0.1)}, {&p2});
  EXPECT_EQ(Speakers(p2),
            (std::vector<std::string>{"SPEAKER_01", "alice", "SPEAKER_00"}));
  // The final: the same speakers in yet another order.
  std::vector<Segment> final =
      Turns({"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"});
  labeler.Apply({"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"},
                {Voice(0), Voice(2, 0.1), Voice(1)}, {&final});
  EXPECT_EQ(Speakers(final),
            (std::vector<std::string>{"SPEAKER_00", "alice", "SPEAKER_01"}));
}

}  // namespace
}  // namespace diarization::pipeline
