// FillResult / FillPartial with and without a SpeakerLabeler: no labeler
// leaves pyannote's output as it is; known speakers rename every view, the
// RTTM and the centroids and list identities; both_views adds the
// exclusive view; stable labels carry from partials to the final.
#include "server/result_convert.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::server {
namespace {

std::vector<float> Voice(int k) {
  std::vector<float> v(256, 0.0f);
  v[k] = 1.0f;
  return v;
}

runtime::JobResult TwoSpeakers(int first_voice, int second_voice) {
  runtime::JobResult r;
  r.output.segments = {{0.5, 2.0, "SPEAKER_00", "u"},
                       {1.5, 3.0, "SPEAKER_01", "u"}};
  r.output.exclusive_segments = {{0.5, 1.5, "SPEAKER_00", "u"},
                                 {1.5, 3.0, "SPEAKER_01", "u"}};
  r.output.labels = {"SPEAKER_00", "SPEAKER_01"};
  r.output.centroids = {Voice(first_voice), Voice(second_voice)};
  r.audio_s = 3.0;
  return r;
}

ValidatedConfig Config() {
  ValidatedConfig c;
  c.request_id = "r";
  c.uri = "u";
  return c;
}

TEST(ResultConvertTest, WithoutALabelerTheOutputIsPyannotes) {
  v1::DiarizeResult out;
  FillResult(TwoSpeakers(0, 1), Config(), &out);
  EXPECT_EQ(out.rttm(),
            "SPEAKER u 1 0.500 1.500 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER u 1 1.500 1.500 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(out.exclusive_segments_size(), 0);
  EXPECT_EQ(out.exclusive_rttm(), "");
  EXPECT_EQ(out.identities_size(), 0);
}

TEST(ResultConvertTest, KnownSpeakerRenamesEveryViewAndListsIdentities) {
  ValidatedConfig c = Config();
  c.both_views = true;
  c.return_centroids = true;
  pipeline::SpeakerLabeler labeler({{"alice", Voice(1)}}, 0.5, false);
  v1::DiarizeResult out;
  FillResult(TwoSpeakers(0, 1), c, &out, &labeler);
  EXPECT_EQ(out.rttm(),
            "SPEAKER u 1 0.500 1.500 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER u 1 1.500 1.500 <NA> <NA> alice <NA> <NA>\n");
  EXPECT_EQ(out.exclusive_rttm(),
            "SPEAKER u 1 0.500 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER u 1 1.500 1.500 <NA> <NA> alice <NA> <NA>\n");
  ASSERT_EQ(out.exclusive_segments_size(), 2);
  EXPECT_EQ(out.exclusive_segments(1).speaker(), "alice");
  ASSERT_EQ(out.centroids_size(), 2);
  EXPECT_EQ(out.centroids(1).speaker(), "alice");
  ASSERT_EQ(out.identities_size(), 2);
  EXPECT_EQ(out.identities(0).speaker(), "SPEAKER_00");
  EXPECT_FALSE(out.identities(0).matched());
  EXPECT_EQ(out.identities(0).best_known_label(), "alice");
  EXPECT_DOUBLE_EQ(out.identities(0).best_score(), 0.0);
  EXPECT_EQ(out.identities(1).speaker(), "alice");
  EXPECT_TRUE(out.identities(1).matched());
  EXPECT_DOUBLE_EQ(out.identities(1).best_score(), 1.0);
  EXPECT_EQ(out.speaker_count(), 2);
}

TEST(ResultConvertTest, ExclusiveStillPicksSegmentsWithBothViews) {
  ValidatedConfig c = Config();
  c.exclusive = true;
  c.both_views = true;
  v1::DiarizeResult out;
  FillResult(TwoSpeakers(0, 1), c, &out);
  EXPECT_EQ(out.rttm(), out.exclusive_rttm());
}

TEST(ResultConvertTest, StableLabelsCarryFromPartialsToTheFinal) {
  ValidatedConfig c = Config();
  c.both_views = true;
  pipeline::SpeakerLabeler labeler({}, 0.5, true);
  runtime::PartialResult p;
  const runtime::JobResult first = TwoSpeakers(0, 1);
  p.segments = first.output.segments;
  p.exclusive_segments = first.output.exclusive_segments;
  p.labels = first.output.labels;
  p.centroids = first.output.centroids;
  v1::PartialResult partial;
  FillPartial(p, c, &partial, &labeler);
  EXPECT_EQ(partial.segments(0).speaker(), "SPEAKER_00");
  EXPECT_EQ(partial.exclusive_segments(1).speaker(), "SPEAKER_01");
  EXPECT_EQ(partial.identities_size(), 0);
  // The final re-clustered the two voices the other way round.
  v1::DiarizeResult out;
  FillResult(TwoSpeakers(1, 0), c, &out, &labeler);
  EXPECT_EQ(out.segments(0).speaker(), "SPEAKER_01");
  EXPECT_EQ(out.segments(1).speaker(), "SPEAKER_00");
  EXPECT_EQ(out.exclusive_segments(0).speaker(), "SPEAKER_01");
}

}  // namespace
}  // namespace diarization::server
