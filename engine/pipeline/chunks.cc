#include "engine/pipeline/chunks.h"

#include <algorithm>
#include <cmath>

namespace diarization::pipeline {

ChunkSamples ChunkSampleRange(int64_t step_samples, int64_t num_samples,
                              int c) {
  const int64_t start = step_samples * c;
  return ChunkSamples{.begin = std::min(start, num_samples),
                      .end = std::min(start + kWindowSamples, num_samples)};
}

ChunkLayout ComputeChunks(int64_t num_samples, const PipelineConfig& config) {
  ChunkLayout layout;
  layout.num_samples = num_samples < 0 ? 0 : num_samples;
  layout.step_samples =
      config.step_samples > 0 ? config.step_samples : kDefaultStepSamples;
  const int64_t n = layout.num_samples;
  const int64_t step = layout.step_samples;
  int64_t full = 0;
  if (n >= kWindowSamples) full = 1 + (n - kWindowSamples) / step;
  // pyannote `slide`: a last, zero-padded chunk when the audio is shorter
  // than one window or samples remain after the last full window.
  const bool has_last = n < kWindowSamples || (n - kWindowSamples) % step > 0;
  layout.num_chunks = static_cast<int>(full + (has_last ? 1 : 0));
  return layout;
}

int64_t ClosestFrame(double t_s) {
  return static_cast<int64_t>(
      std::nearbyint((t_s - 0.0 - 0.5 * kFrameDurationS) / kFrameStepS));
}

double FrameMiddle(int64_t i) {
  const double start = 0.0 + static_cast<double>(i) * kFrameStepS;
  const double end = start + kFrameDurationS;
  return 0.5 * (start + end);
}

FrameGrid ComputeFrameGrid(int num_chunks, double chunk_step_s) {
  FrameGrid grid;
  if (num_chunks <= 0) return grid;
  const double window_s = static_cast<double>(kWindowSamples) / kSampleRateHz;
  grid.num_frames = static_cast<int>(
      ClosestFrame(0.0 + window_s + (num_chunks - 1) * chunk_step_s +
                   0.5 * kFrameDurationS) +
      1);
  grid.chunk_offset.resize(num_chunks);
  for (int c = 0; c < num_chunks; ++c) {
    const double chunk_start = 0.0 + c * chunk_step_s;
    grid.chunk_offset[c] =
        static_cast<int>(ClosestFrame(chunk_start + 0.5 * kFrameDurationS));
  }
  return grid;
}

}  // namespace diarization::pipeline
