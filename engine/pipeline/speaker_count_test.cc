#include "engine/pipeline/speaker_count.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

constexpr int F = kFramesPerWindow;

TEST(SpeakerCountTest, AveragesOverlappingWindowsAndRoundsHalfToEven) {
  const FrameGrid grid = ComputeFrameGrid(2, 1.0);  // offsets 0 and 59
  std::vector<float> seg(2 * F * 3, 0.0f);
  // Window 0: one speaker everywhere; window 1: nobody. Frames 59..588 are
  // covered twice: (1 + 0) / 2 = 0.5 → 0 (half to even). Frames 0..58: 1.
  for (int f = 0; f < F; ++f) seg[f * 3] = 1;
  auto count = SpeakerCount(seg, grid);
  ASSERT_EQ(static_cast<int>(count.size()), grid.num_frames);
  EXPECT_EQ(count[0], 1);
  EXPECT_EQ(count[58], 1);
  EXPECT_EQ(count[59], 0);
  EXPECT_EQ(count[588], 0);
  // Window 1 with 2 speakers: (1 + 2) / 2 = 1.5 → 2; past window 0: 2.
  for (int f = 0; f < F; ++f) seg[(F + f) * 3 + 1] = seg[(F + f) * 3 + 2] = 1;
  count = SpeakerCount(seg, grid);
  EXPECT_EQ(count[100], 2);
  EXPECT_EQ(count[600], 2);
  // Frames no window covers (the grid's tail) are 0.
  EXPECT_EQ(count[grid.num_frames - 1], 0);
}

TEST(SpeakerCountTest, RandomInputsMatchADirectFloat64Average) {
  std::srand(1234);
  const int windows = 7;
  const FrameGrid grid = ComputeFrameGrid(windows, 1.0);
  std::vector<float> seg(windows * F * 3);
  for (float& v : seg) v = (std::rand() % 3 == 0) ? 1.0f : 0.0f;
  const auto count = SpeakerCount(seg, grid);
  for (int t = 0; t < grid.num_frames; ++t) {
    double sum = 0;
    int n = 0;
    for (int c = 0; c < windows; ++c) {
      const int f = t - grid.window_offset[c];
      if (f < 0 || f >= F) continue;
      ++n;
      for (int s = 0; s < 3; ++s) sum += seg[(c * F + f) * 3 + s];
    }
    const double avg = n ? sum / n : 0.0;
    EXPECT_EQ(count[t], static_cast<int>(std::nearbyint(avg))) << t;
  }
}

}  // namespace
}  // namespace diarization::pipeline
