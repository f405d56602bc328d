#include "engine/pipeline/reconstruction.h"

#include <algorithm>
#include <cmath>
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

// The frames split over threads: for fresh random segmentations (NaNs
// included), assignments (dropped speakers, shared clusters) and counts,
// every thread count gives the bits of a frame-major reference that adds
// each frame's windows in ascending order, as pyannote's aggregate does.
// Enough windows (~35,000 frames) that 2-7 threads really split them.
TEST(ReconstructionTest, ThreadCountDoesNotChangeABit) {
  std::mt19937 rng(std::random_device{}());
  constexpr int S = kLocalSpeakers;
  const int num_windows = 600;
  const FrameGrid grid = ComputeFrameGrid(num_windows, 1.0);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  std::uniform_int_distribution<int> cluster(-2, 3), pct(0, 99), cnt(0, 3);
  std::vector<float> seg(static_cast<size_t>(num_windows) * F * S);
  for (float& v : seg) v = pct(rng) == 0 ? NAN : value(rng);
  std::vector<int> hard(num_windows * S);
  for (int& h : hard) h = cluster(rng) < 0 ? -2 : cluster(rng) & 3;
  std::vector<uint8_t> count(grid.num_frames);
  for (uint8_t& c : count) c = cnt(rng);

  int columns = 0;
  for (int h : hard) columns = std::max(columns, h + 1);
  columns = std::max(columns, 3);
  std::vector<float> want(static_cast<size_t>(grid.num_frames) * columns, 0);
  for (int t = 0; t < grid.num_frames; ++t) {
    for (int c = 0; c < num_windows; ++c) {
      const int f = t - grid.window_offset[c];
      if (f < 0 || f >= F) continue;
      for (int k = 0; k < columns; ++k) {
        float v = NAN;
        bool any = false;
        for (int s = 0; s < S; ++s) {
          if (hard[c * S + s] != k) continue;
          const float x = seg[(static_cast<size_t>(c) * F + f) * S + s];
          v = any ? std::max(v, x) : x;
          any = true;
        }
        if (any && !std::isnan(v)) want[size_t(t) * columns + k] += v;
      }
    }
  }
  const Activations one = AggregateActivations(seg, hard, count, grid, 1);
  const DiscreteDiarization top_one = TopSpeakers(one, count, 1);
  ASSERT_EQ(one.columns, columns);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(one.data[i], want[i]) << "entry " << i;
  }
  for (int threads : {2, 3, 7}) {
    const Activations act =
        AggregateActivations(seg, hard, count, grid, threads);
    ASSERT_EQ(act.data, one.data) << threads << " threads";
    EXPECT_EQ(TopSpeakers(act, count, threads).data, top_one.data)
        << threads << " threads";
  }
}

}  // namespace
}  // namespace diarization::pipeline
