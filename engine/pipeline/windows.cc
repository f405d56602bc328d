#include "engine/pipeline/windows.h"

#include <algorithm>
#include <cmath>

namespace diarization::pipeline {

WindowRange WindowSampleRange(int64_t step_samples, int64_t num_samples,
                              int w) {
  const int64_t start = step_samples * w;
  return WindowRange{.begin = std::min(start, num_samples),
                     .end = std::min(start + kWindowSamples, num_samples)};
}

WindowLayout ComputeWindows(int64_t num_samples, const PipelineConfig& config) {
  WindowLayout layout;
  layout.num_samples = num_samples < 0 ? 0 : num_samples;
  layout.step_samples =
      config.step_samples > 0 ? config.step_samples : kDefaultStepSamples;
  const int64_t n = layout.num_samples;
  const int64_t step = layout.step_samples;
  int64_t full = 0;
  if (n >= kWindowSamples) full = 1 + (n - kWindowSamples) / step;
  // pyannote `slide`: a last, zero-padded window when the audio is shorter
  // than one window or samples remain after the last full window.
  const bool has_last = n < kWindowSamples || (n - kWindowSamples) % step > 0;
  layout.num_windows = static_cast<int>(full + (has_last ? 1 : 0));
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

FrameGrid ComputeFrameGrid(int num_windows, double step_s) {
  FrameGrid grid;
  if (num_windows <= 0) return grid;
  const double window_s = static_cast<double>(kWindowSamples) / kSampleRateHz;
  grid.num_frames = static_cast<int>(ClosestFrame(0.0 + window_s +
                                                  (num_windows - 1) * step_s +
                                                  0.5 * kFrameDurationS) +
                                     1);
  grid.window_offset.resize(num_windows);
  for (int w = 0; w < num_windows; ++w) {
    const double window_start_s = 0.0 + w * step_s;
    grid.window_offset[w] =
        static_cast<int>(ClosestFrame(window_start_s + 0.5 * kFrameDurationS));
  }
  return grid;
}

}  // namespace diarization::pipeline
