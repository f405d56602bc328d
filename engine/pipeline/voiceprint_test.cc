#include "engine/pipeline/voiceprint.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

std::vector<float> Vec(float x) { return std::vector<float>(256, x); }

TEST(DominantSpeakerVoiceprintTest, TakesTheDominantSpeakersCentroid) {
  // SPEAKER_01: 2 + 3 = 5 s; SPEAKER_00: 1 s (share 5/6).
  const auto vp =
      DominantSpeakerVoiceprint({{0, 2, "SPEAKER_01", ""},
                                 {2, 3, "SPEAKER_00", ""},
                                 {3, 6, "SPEAKER_01", ""}},
                                {"SPEAKER_00", "SPEAKER_01"}, {Vec(1), Vec(2)});
  ASSERT_TRUE(vp.ok()) << vp.status();
  EXPECT_DOUBLE_EQ(vp->speech_s, 5.0);
  EXPECT_EQ(vp->embedding, Vec(2));
}

TEST(DominantSpeakerVoiceprintTest, TooLittleSpeechNamesTheFigures) {
  const auto vp = DominantSpeakerVoiceprint({{0, 2.5, "SPEAKER_00", ""}},
                                            {"SPEAKER_00"}, {Vec(1)});
  EXPECT_EQ(vp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(vp.status().message().find("2.50 s found"), std::string::npos)
      << vp.status();
  const auto none = DominantSpeakerVoiceprint({}, {}, {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DominantSpeakerVoiceprintTest, TwoSpeakersDominatingIsRefused) {
  // 6 s against 4 s: 60 % < 2/3.
  const auto vp = DominantSpeakerVoiceprint(
      {{0, 6, "SPEAKER_00", ""}, {6, 10, "SPEAKER_01", ""}},
      {"SPEAKER_00", "SPEAKER_01"}, {Vec(1), Vec(2)});
  EXPECT_EQ(vp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(vp.status().message().find("60%"), std::string::npos)
      << vp.status();
  EXPECT_NE(vp.status().message().find("SPEAKER_01 4.00 s"), std::string::npos)
      << vp.status();
  // 7 s against 3 s: 70 % passes.
  EXPECT_TRUE(DominantSpeakerVoiceprint(
                  {{0, 7, "SPEAKER_00", ""}, {7, 10, "SPEAKER_01", ""}},
                  {"SPEAKER_00", "SPEAKER_01"}, {Vec(1), Vec(2)})
                  .ok());
}

TEST(DominantSpeakerVoiceprintTest, NoCentroidIsRefused) {
  const auto vp = DominantSpeakerVoiceprint({{0, 5, "SPEAKER_00", ""}},
                                            {"SPEAKER_00"}, {Vec(0)});
  EXPECT_EQ(vp.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace diarization::pipeline
