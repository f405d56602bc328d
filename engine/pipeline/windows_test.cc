#include "engine/pipeline/windows.h"

#include <cmath>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

TEST(WindowsTest, WindowCountsMatchTheFixtureWavs) {
  const PipelineConfig accurate;
  // (samples, windows) from fixtures.md tables A and B (wav lengths).
  EXPECT_EQ(ComputeWindows(416247, accurate).num_windows, 18);  // test.wav
  EXPECT_EQ(ComputeWindows(565104, accurate).num_windows, 27);  // 3speakers
  EXPECT_EQ(ComputeWindows(240777, accurate).num_windows, 7);   // single
  EXPECT_EQ(ComputeWindows(52623, accurate).num_windows, 1);    // short
  EXPECT_EQ(ComputeWindows(480000, accurate).num_windows,
            21);  // sample.wav 30 s
}

TEST(WindowsTest, LastWindowOnlyWhenSamplesRemain) {
  const PipelineConfig c;
  EXPECT_EQ(ComputeWindows(160000, c).num_windows, 1);  // exactly one window
  EXPECT_EQ(ComputeWindows(160001, c).num_windows, 2);  // one sample left
  EXPECT_EQ(ComputeWindows(176000, c).num_windows, 2);  // two full windows
  EXPECT_EQ(ComputeWindows(0, c).num_windows, 1);       // padded empty window
  EXPECT_EQ(ComputeWindows(1, c).window_start(0), 0);
  EXPECT_EQ(ComputeWindows(200000, c).window_start(3), 48000);
}

TEST(WindowsTest, WindowRangeIsTheWindowInsideTheAudio) {
  // pyannote `slide`: window c is samples [c·step, c·step + 160000) of the
  // audio, zero-padded past its end (pipeline.md §2).
  const WindowLayout layout = ComputeWindows(200000, PipelineConfig());
  ASSERT_EQ(layout.num_windows, 4);
  EXPECT_EQ(layout.window_range(0).begin, 0);
  EXPECT_EQ(layout.window_range(0).end, 160000);
  EXPECT_EQ(layout.window_range(2).begin, 32000);
  EXPECT_EQ(layout.window_range(2).end, 192000);
  EXPECT_EQ(layout.window_range(3).begin, 48000);  // the padded last one
  EXPECT_EQ(layout.window_range(3).end, 200000);
  // Shorter than one window: one window, all of the audio.
  const WindowLayout short_audio = ComputeWindows(52623, PipelineConfig());
  EXPECT_EQ(short_audio.window_range(0).begin, 0);
  EXPECT_EQ(short_audio.window_range(0).end, 52623);
  // A stream whose audio has not reached the window yet: empty, at the end.
  EXPECT_EQ(WindowSampleRange(16000, 40000, 3).begin, 40000);
  EXPECT_EQ(WindowSampleRange(16000, 40000, 3).end, 40000);
  EXPECT_EQ(WindowSampleRange(16000, 40000, 2).begin, 32000);
  EXPECT_EQ(WindowSampleRange(16000, 40000, 2).end, 40000);
  // FAST mode's 2 s step.
  EXPECT_EQ(WindowSampleRange(32000, 1000000, 5).begin, 160000);
  EXPECT_EQ(WindowSampleRange(32000, 1000000, 5).end, 320000);
}

TEST(WindowsTest, FrameGridMatchesPyannote) {
  // pipeline.md §4: F = 1601 for C=18, 1779 for 21, 594 for 1; offsets.
  EXPECT_EQ(ComputeFrameGrid(18, 1.0).num_frames, 1601);
  EXPECT_EQ(ComputeFrameGrid(21, 1.0).num_frames, 1779);
  EXPECT_EQ(ComputeFrameGrid(1, 1.0).num_frames, 594);
  EXPECT_EQ(ComputeFrameGrid(218, 1.0).num_frames, 13453);  // findit 01
  const FrameGrid g = ComputeFrameGrid(4, 1.0);
  EXPECT_EQ(g.window_offset, (std::vector<int>{0, 59, 119, 178}));
}

TEST(WindowsTest, FastModeGeometryByConstruction) {
  // Step 2 s: window c starts at 2c s; its first frame is rint(2c / s) and
  // the grid ends one frame after the last window's end.
  PipelineConfig fast = PipelineConfig::Fast();
  EXPECT_EQ(fast.step_samples, 32000);
  EXPECT_EQ(ComputeWindows(480000, fast).num_windows, 11);  // 11 full windows
  EXPECT_EQ(ComputeWindows(490000, fast).num_windows, 12);  // + 1 padded
  EXPECT_EQ(ComputeWindows(480000, fast).window_start(10), 320000);
  const int windows = 11;
  const FrameGrid g = ComputeFrameGrid(windows, 2.0);
  for (int c = 0; c < windows; ++c) {
    EXPECT_EQ(g.window_offset[c],
              static_cast<int>(std::nearbyint(2.0 * c / kFrameStepS)));
  }
  const double end_s = 10.0 + 2.0 * (windows - 1);
  EXPECT_EQ(g.num_frames,
            static_cast<int>(std::nearbyint(end_s / kFrameStepS)) + 1);
}

TEST(WindowsTest, FrameMiddleAndClosestFrameAreInverse) {
  for (int i : {0, 1, 58, 589, 13452})
    EXPECT_EQ(ClosestFrame(FrameMiddle(i)), i);
  EXPECT_DOUBLE_EQ(FrameMiddle(0), 0.03096875);
}

}  // namespace
}  // namespace diarization::pipeline
