#include "engine/pipeline/chunks.h"

#include <cmath>

#include "gtest/gtest.h"

namespace diarization::pipeline {
namespace {

TEST(ChunksTest, ChunkCountsMatchTheFixtureWavs) {
  const PipelineConfig accurate;
  // (samples, chunks) from fixtures.md tables A and B (wav lengths).
  EXPECT_EQ(ComputeChunks(416247, accurate).num_chunks, 18);  // test.wav
  EXPECT_EQ(ComputeChunks(565104, accurate).num_chunks, 27);  // 3speakers
  EXPECT_EQ(ComputeChunks(240777, accurate).num_chunks, 7);   // single
  EXPECT_EQ(ComputeChunks(52623, accurate).num_chunks, 1);    // short
  EXPECT_EQ(ComputeChunks(480000, accurate).num_chunks, 21);  // sample.wav 30 s
}

TEST(ChunksTest, LastChunkOnlyWhenSamplesRemain) {
  const PipelineConfig c;
  EXPECT_EQ(ComputeChunks(160000, c).num_chunks, 1);  // exactly one window
  EXPECT_EQ(ComputeChunks(160001, c).num_chunks, 2);  // one sample left
  EXPECT_EQ(ComputeChunks(176000, c).num_chunks, 2);  // two full windows
  EXPECT_EQ(ComputeChunks(0, c).num_chunks, 1);       // padded empty chunk
  EXPECT_EQ(ComputeChunks(1, c).chunk_start(0), 0);
  EXPECT_EQ(ComputeChunks(200000, c).chunk_start(3), 48000);
}

TEST(ChunksTest, ChunkSamplesAreTheWindowInsideTheAudio) {
  // pyannote `slide`: chunk c is samples [c·step, c·step + 160000) of the
  // audio, zero-padded past its end (pipeline.md §2).
  const ChunkLayout layout = ComputeChunks(200000, PipelineConfig());
  ASSERT_EQ(layout.num_chunks, 4);
  EXPECT_EQ(layout.chunk_samples(0).begin, 0);
  EXPECT_EQ(layout.chunk_samples(0).end, 160000);
  EXPECT_EQ(layout.chunk_samples(2).begin, 32000);
  EXPECT_EQ(layout.chunk_samples(2).end, 192000);
  EXPECT_EQ(layout.chunk_samples(3).begin, 48000);  // the padded last one
  EXPECT_EQ(layout.chunk_samples(3).end, 200000);
  // Shorter than one window: one chunk, all of the audio.
  const ChunkLayout short_audio = ComputeChunks(52623, PipelineConfig());
  EXPECT_EQ(short_audio.chunk_samples(0).begin, 0);
  EXPECT_EQ(short_audio.chunk_samples(0).end, 52623);
  // A stream whose audio has not reached the chunk yet: empty, at the end.
  EXPECT_EQ(ChunkSampleRange(16000, 40000, 3).begin, 40000);
  EXPECT_EQ(ChunkSampleRange(16000, 40000, 3).end, 40000);
  EXPECT_EQ(ChunkSampleRange(16000, 40000, 2).begin, 32000);
  EXPECT_EQ(ChunkSampleRange(16000, 40000, 2).end, 40000);
  // FAST mode's 2 s step.
  EXPECT_EQ(ChunkSampleRange(32000, 1000000, 5).begin, 160000);
  EXPECT_EQ(ChunkSampleRange(32000, 1000000, 5).end, 320000);
}

TEST(ChunksTest, FrameGridMatchesPyannote) {
  // pipeline.md §4: F = 1601 for C=18, 1779 for 21, 594 for 1; offsets.
  EXPECT_EQ(ComputeFrameGrid(18, 1.0).num_frames, 1601);
  EXPECT_EQ(ComputeFrameGrid(21, 1.0).num_frames, 1779);
  EXPECT_EQ(ComputeFrameGrid(1, 1.0).num_frames, 594);
  EXPECT_EQ(ComputeFrameGrid(218, 1.0).num_frames, 13453);  // findit 01
  const FrameGrid g = ComputeFrameGrid(4, 1.0);
  EXPECT_EQ(g.chunk_offset, (std::vector<int>{0, 59, 119, 178}));
}

TEST(ChunksTest, FastModeGeometryByConstruction) {
  // Step 2 s: chunk c starts at 2c s; its first frame is rint(2c / s) and
  // the grid ends one frame after the last chunk's end.
  PipelineConfig fast = PipelineConfig::Fast();
  EXPECT_EQ(fast.step_samples, 32000);
  EXPECT_EQ(ComputeChunks(480000, fast).num_chunks, 11);  // 11 full windows
  EXPECT_EQ(ComputeChunks(490000, fast).num_chunks, 12);  // + 1 padded
  EXPECT_EQ(ComputeChunks(480000, fast).chunk_start(10), 320000);
  const int chunks = 11;
  const FrameGrid g = ComputeFrameGrid(chunks, 2.0);
  for (int c = 0; c < chunks; ++c) {
    EXPECT_EQ(g.chunk_offset[c],
              static_cast<int>(std::nearbyint(2.0 * c / kFrameStepS)));
  }
  const double end_s = 10.0 + 2.0 * (chunks - 1);
  EXPECT_EQ(g.num_frames,
            static_cast<int>(std::nearbyint(end_s / kFrameStepS)) + 1);
}

TEST(ChunksTest, FrameMiddleAndClosestFrameAreInverse) {
  for (int i : {0, 1, 58, 589, 13452})
    EXPECT_EQ(ClosestFrame(FrameMiddle(i)), i);
  EXPECT_DOUBLE_EQ(FrameMiddle(0), 0.03096875);
}

}  // namespace
}  // namespace diarization::pipeline
