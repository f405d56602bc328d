#include "engine/pipeline/reconstruction.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

constexpr int F = kFramesPerWindow;

TEST(ReconstructionTest, TopCountColumnsWithTiesToTheLowerColumn) {
  const FrameGrid grid = ComputeFrameGrid(1, 1.0);
  std::vector<float> seg(F * 3, 0.0f);
  for (int f = 0; f < F; ++f) {
    seg[f * 3 + 0] = 1;        // local 0 → cluster 1
    seg[f * 3 + 1] = f < 100;  // local 1 → cluster 0 (ties with 1 early)
    seg[f * 3 + 2] = 1;        // local 2 → cluster 1 too (max, not sum)
  }
  const std::vector<int> hard = {1, 0, 1};
  std::vector<uint8_t> count(grid.num_frames, 1);
  const auto d = Reconstruct(seg, hard, count, grid);
  ASSERT_EQ(d.num_speakers, 2);
  // Frames < 100: activations tie at 1 → column 0 wins.
  EXPECT_EQ(d.data[0 * 2 + 0], 1.0f);
  EXPECT_EQ(d.data[0 * 2 + 1], 0.0f);
  // Frames ≥ 100: only cluster 1 is active.
  EXPECT_EQ(d.data[200 * 2 + 0], 0.0f);
  EXPECT_EQ(d.data[200 * 2 + 1], 1.0f);
}

TEST(ReconstructionTest, PadsColumnsWhenTheCountExceedsTheClusters) {
  const FrameGrid grid = ComputeFrameGrid(1, 1.0);
  std::vector<float> seg(F * 3, 0.0f);
  for (int f = 0; f < F; ++f) seg[f * 3] = seg[f * 3 + 1] = 1;
  const std::vector<int> hard = {0, -2, -2};  // one cluster, count says 2
  std::vector<uint8_t> count(grid.num_frames, 2);
  const auto d = Reconstruct(seg, hard, count, grid);
  ASSERT_EQ(d.num_speakers, 2);
  EXPECT_EQ(d.data[10 * 2 + 0], 1.0f);
  EXPECT_EQ(d.data[10 * 2 + 1], 1.0f);  // the zero-padded column is chosen
}

TEST(ReconstructionTest, SumsOverlappingWindows) {
  const FrameGrid grid = ComputeFrameGrid(2, 1.0);
  std::vector<float> seg(2 * F * 3, 0.0f);
  for (int f = 0; f < F; ++f) {
    seg[f * 3 + 0] = 1;               // window 0: cluster 0
    seg[(F + f) * 3 + 0] = 1;         // window 1: local 0 → cluster 1
    seg[(F + f) * 3 + 1] = f >= 500;  // window 1: local 1 → cluster 0
  }
  const std::vector<int> hard = {0, -2, -2, 1, 0, -2};
  const auto act = AggregateActivations(
      seg, hard, std::vector<uint8_t>(grid.num_frames, 1), grid);
  EXPECT_EQ(act.data[100 * 2 + 0], 1.0f);
  EXPECT_EQ(act.data[100 * 2 + 1], 1.0f);
  EXPECT_EQ(act.data[(59 + 540) * 2 + 0],
            1.0f);  // window 1 only (window 0 ended at 588)
  EXPECT_EQ(act.data[(59 + 520) * 2 + 0], 2.0f);  // frame 579: both windows
}

TEST(ReconstructionTest, TopSpeakersEqualsAStableArgsortOnRandomTies) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> level(0, 3), cnt(0, 4);
  Activations act;
  act.num_frames = 500;
  act.columns = 6;
  std::vector<uint8_t> count(act.num_frames);
  for (int t = 0; t < act.num_frames; ++t) {
    for (int k = 0; k < act.columns; ++k)
      act.data.push_back(level(rng));  // many ties
    count[t] = cnt(rng);
  }
  const auto d = TopSpeakers(act, count);
  for (int t = 0; t < act.num_frames; ++t) {
    std::vector<int> order(act.columns);
    std::iota(order.begin(), order.end(), 0);
    const float* a = &act.data[t * act.columns];
    std::stable_sort(order.begin(), order.end(),
                     [a](int x, int y) { return a[x] > a[y]; });
    std::vector<float> want(act.columns, 0.0f);
    for (int i = 0; i < std::min<int>(count[t], act.columns); ++i)
      want[order[i]] = 1.0f;
    for (int k = 0; k < act.columns; ++k)
      ASSERT_EQ(d.data[t * act.columns + k], want[k]) << t;
  }
}

}  // namespace
}  // namespace diarization::pipeline
