#include "engine/pipeline/segments.h"

#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

DiscreteDiarization Make(int frames, int columns,
                         std::vector<std::pair<int, std::pair<int, int>>> on) {
  DiscreteDiarization d;
  d.num_frames = frames;
  d.num_speakers = columns;
  d.data.assign(frames * columns, 0.0f);
  for (auto& [k, range] : on) {
    for (int t = range.first; t < range.second; ++t)
      d.data[t * columns + k] = 1;
  }
  return d;
}

TEST(SegmentsTest, TurnsStartAndEndAtFrameMiddles) {
  const auto d = Make(50, 2, {{0, {0, 10}}, {1, {20, 50}}, {0, {30, 31}}});
  const auto turns = Binarize(d, 0.0);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_DOUBLE_EQ(turns[0].start_s, FrameMiddle(0));
  EXPECT_DOUBLE_EQ(turns[0].end_s, FrameMiddle(10));
  EXPECT_DOUBLE_EQ(turns[1].start_s, FrameMiddle(30));
  EXPECT_DOUBLE_EQ(turns[1].end_s, FrameMiddle(31));
  EXPECT_DOUBLE_EQ(turns[2].start_s, FrameMiddle(20));
  EXPECT_DOUBLE_EQ(turns[2].end_s, FrameMiddle(49));  // open at the end
}

TEST(SegmentsTest, MinDurationOffFillsShortGaps) {
  const auto d = Make(50, 1, {{0, {0, 10}}, {0, {12, 20}}, {0, {40, 45}}});
  const auto turns = Binarize(d, 0.1);  // 2 frames = 0.03375 s < 0.1 s
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_DOUBLE_EQ(turns[0].end_s, FrameMiddle(20));
}

TEST(SegmentsTest, LabelsSortLikePythonStrings) {
  std::vector<Turn> turns;
  for (int k : {0, 1, 2, 10, 11}) turns.push_back({1.0 * k, 1.0 * k + 0.5, k});
  const auto labels = SpeakerLabels(turns);
  // str order: "0" < "1" < "10" < "11" < "2"; column 3..9 have no turn.
  EXPECT_EQ(labels.at(0), "SPEAKER_00");
  EXPECT_EQ(labels.at(1), "SPEAKER_01");
  EXPECT_EQ(labels.at(10), "SPEAKER_02");
  EXPECT_EQ(labels.at(11), "SPEAKER_03");
  EXPECT_EQ(labels.at(2), "SPEAKER_04");
}

TEST(SegmentsTest, OrderIsStartEndThenTrackName) {
  // Same (start, end) on columns 1 ('B') and 26 ('AA'): 'AA' < 'B'.
  std::vector<Turn> turns = {{2, 3, 1}, {2, 3, 26}, {1, 5, 0}, {1, 4, 3}};
  const auto segs = ToSegments(turns, SpeakerLabels(turns), "u");
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].end_s, 4);
  EXPECT_EQ(segs[1].end_s, 5);
  EXPECT_EQ(segs[2].speaker, SpeakerLabels(turns).at(26));
  EXPECT_EQ(segs[3].speaker, SpeakerLabels(turns).at(1));
  EXPECT_EQ(segs[0].uri, "u");
}

}  // namespace
}  // namespace diarization::pipeline
