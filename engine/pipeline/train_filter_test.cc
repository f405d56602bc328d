#include "engine/pipeline/train_filter.h"

#include <cmath>
#include <vector>

#include "engine/pipeline/config.h"
#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

constexpr int F = kFramesPerWindow;
constexpr int D = kEmbeddingDim;

TEST(TrainFilterTest, KeepsSpeakersAloneForAtLeast118Frames) {
  const int windows = 2;
  std::vector<float> seg(windows * F * 3, 0.0f);
  std::vector<float> emb(windows * 3 * D, 0.5f);
  auto set = [&](int c, int s, int from, int to) {
    for (int f = from; f < to; ++f) seg[(c * F + f) * 3 + s] = 1;
  };
  set(0, 0, 0, 118);    // exactly 118 clean frames: kept
  set(0, 1, 200, 317);  // 117: dropped
  set(1, 2, 0, 400);    // 400 frames, 200 of them overlapped by speaker 0
  set(1, 0, 100, 300);  // 200 frames, all overlapped: dropped
  set(1, 1, 400, 589);  // 189 clean frames but a NaN embedding: dropped
  emb[(1 * 3 + 1) * D + 17] = std::nanf("");
  const TrainSet t = FilterTrainEmbeddings(seg, emb, windows);
  EXPECT_EQ(t.window_idx, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.speaker_idx, (std::vector<int>{0, 2}));
  // Its two halves: the clean pairs (the NaN one still in), then the check.
  const TrainSet clean = CleanActivePairs(seg, windows);
  EXPECT_EQ(clean.window_idx, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(clean.speaker_idx, (std::vector<int>{0, 1, 2}));
  const TrainSet finite = KeepFiniteEmbeddings(clean, emb);
  EXPECT_EQ(finite.window_idx, (std::vector<int>{0, 1}));
  EXPECT_EQ(finite.speaker_idx, (std::vector<int>{0, 2}));
  const auto inactive = InactiveSpeakers(seg, windows);
  EXPECT_EQ(inactive,
            (std::vector<bool>{false, false, true, false, false, false}));
}

}  // namespace
}  // namespace diarization::pipeline
