#include "engine/pipeline/embedding_masks.h"

#include <vector>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

constexpr int F = kFramesPerWindow;

float& At(std::vector<float>& seg, int c, int f, int s) {
  return seg[(c * F + f) * 3 + s];
}

TEST(EmbeddingMasksTest, OverlapIsRemovedWhenEnoughCleanFramesRemain) {
  std::vector<float> seg(F * 3, 0.0f);
  for (int f = 0; f < 100; ++f) At(seg, 0, f, 0) = 1;    // speaker 0: 0..99
  for (int f = 90; f < 200; ++f) At(seg, 0, f, 1) = 1;   // speaker 1: 90..199
  for (int f = 300; f < 302; ++f) At(seg, 0, f, 2) = 1;  // speaker 2: 2 frames
  for (int f = 300; f < 302; ++f) At(seg, 0, f, 1) = 1;  // ... overlapped
  const auto masks = EmbeddingMasks(seg, 1, PipelineConfig{});
  ASSERT_EQ(masks.size(), 3u * F);
  for (int f = 0; f < F; ++f) {
    EXPECT_EQ(masks[0 * F + f], (f < 90) ? 1.0f : 0.0f) << f;
    EXPECT_EQ(masks[1 * F + f], (f >= 100 && f < 200) ? 1.0f : 0.0f) << f;
    // Speaker 2 has no clean frame (0 <= 2): the plain column is used.
    EXPECT_EQ(masks[2 * F + f], (f >= 300 && f < 302) ? 1.0f : 0.0f) << f;
  }
}

TEST(EmbeddingMasksTest, ThresholdIsStrictlyMoreThanTwoCleanFrames) {
  std::vector<float> seg(F * 3, 0.0f);
  for (int f = 0; f < 10; ++f) At(seg, 0, f, 0) = 1;
  for (int f = 2; f < 10; ++f) At(seg, 0, f, 1) = 1;  // 2 clean frames of 0
  auto masks = EmbeddingMasks(seg, 1, PipelineConfig{});
  for (int f = 0; f < 10; ++f) EXPECT_EQ(masks[f], 1.0f);  // plain column
  At(seg, 0, 2, 1) = 0;                                    // now 3 clean frames
  masks = EmbeddingMasks(seg, 1, PipelineConfig{});
  for (int f = 0; f < 10; ++f) EXPECT_EQ(masks[f], f < 3 ? 1.0f : 0.0f);
}

TEST(EmbeddingMasksTest, WithoutExcludeOverlapMasksAreTheSegmentation) {
  std::vector<float> seg(2 * F * 3, 0.0f);
  for (int f = 0; f < F; f += 3) At(seg, 1, f, 2) = 1;
  for (int f = 0; f < F; f += 2) At(seg, 1, f, 0) = 1;
  PipelineConfig c;
  c.embedding_exclude_overlap = false;
  const auto masks = EmbeddingMasks(seg, 2, c);
  for (int s = 0; s < 3; ++s) {
    for (int f = 0; f < F; ++f)
      EXPECT_EQ(masks[(3 + s) * F + f], At(seg, 1, f, s));
  }
}

}  // namespace
}  // namespace diarization::pipeline
