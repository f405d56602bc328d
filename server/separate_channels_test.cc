// MergeChannelResults and RttmWithChannelColumn on hand-made results.
#include "server/separate_channels.h"

#include "engine/pipeline/rttm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::server {
namespace {

runtime::JobResult Result(std::vector<Segment> segments, double audio_s,
                          double processing_s, const char* device) {
  runtime::JobResult r;
  r.output.segments = segments;
  r.output.exclusive_segments = segments;
  for (const Segment& s : segments) {
    if (std::find(r.output.labels.begin(), r.output.labels.end(),
                  s.speaker) == r.output.labels.end()) {
      r.output.labels.push_back(s.speaker);
      r.output.centroids.push_back(
          std::vector<float>(256, static_cast<float>(r.output.labels.size())));
    }
  }
  r.audio_s = audio_s;
  r.processing_s = processing_s;
  r.device = device;
  return r;
}

TEST(MergeChannelResults, RelabelsSortsAndKeepsCentroidsInChannelOrder) {
  std::vector<runtime::JobResult> per_channel;
  per_channel.push_back(Result({{0.5, 2.0, "SPEAKER_00"}, {3.0, 4.0, "SPEAKER_01"}},
                               10.0, 2.0, "cpu"));
  per_channel.push_back(
      Result({{0.5, 1.0, "SPEAKER_00"}, {2.5, 5.0, "SPEAKER_00"}}, 10.0, 4.0,
             "cpu"));
  const runtime::JobResult m = MergeChannelResults(std::move(per_channel));
  const std::vector<Segment> expected = {{0.5, 1.0, "ch1:SPEAKER_00"},
                                         {0.5, 2.0, "ch0:SPEAKER_00"},
                                         {2.5, 5.0, "ch1:SPEAKER_00"},
                                         {3.0, 4.0, "ch0:SPEAKER_01"}};
  ASSERT_EQ(m.output.segments.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.output.segments[i].start_s, expected[i].start_s);
    EXPECT_EQ(m.output.segments[i].end_s, expected[i].end_s);
    EXPECT_EQ(m.output.segments[i].speaker, expected[i].speaker);
  }
  EXPECT_EQ(m.output.exclusive_segments.size(), 4u);
  EXPECT_THAT(m.output.labels,
              ::testing::ElementsAre("ch0:SPEAKER_00", "ch0:SPEAKER_01",
                                     "ch1:SPEAKER_00"));
  ASSERT_EQ(m.output.centroids.size(), 3u);
  EXPECT_EQ(m.output.centroids[1][0], 2.0f);  // ch0's second speaker
  EXPECT_EQ(m.output.centroids[2][0], 1.0f);  // ch1's first
  EXPECT_EQ(m.audio_s, 10.0);
  EXPECT_EQ(m.processing_s, 4.0);
  EXPECT_EQ(m.rtfx, 2.5);
  EXPECT_EQ(m.device, "cpu");
}

TEST(RttmWithChannelColumn, SetsTheOneBasedChannelFromTheLabel) {
  const std::vector<Segment> segments = {{0.5, 1.0, "ch1:SPEAKER_00"},
                                         {0.5, 2.0, "ch0:SPEAKER_00"},
                                         {2.0, 3.0, "ch12:SPEAKER_03"},
                                         {3.0, 4.0, "SPEAKER_00"}};
  const std::string rttm = RttmWithChannelColumn(FormatRttm(segments, "call"));
  EXPECT_EQ(rttm,
            "SPEAKER call 2 0.500 0.500 <NA> <NA> ch1:SPEAKER_00 <NA> <NA>\n"
            "SPEAKER call 1 0.500 1.500 <NA> <NA> ch0:SPEAKER_00 <NA> <NA>\n"
            "SPEAKER call 13 2.000 1.000 <NA> <NA> ch12:SPEAKER_03 <NA> "
            "<NA>\n"
            "SPEAKER call 1 3.000 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
}

}  // namespace
}  // namespace diarization::server
