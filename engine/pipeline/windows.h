// Sliding windows over the audio and the frame grid they map to
// (pipeline.md §2 and §4; pyannote core/inference.py `slide` and
// `aggregate`, pyannote.core SlidingWindow.closest_frame). Integer sample
// arithmetic for the windows; float64 for frame times, as pyannote.
#ifndef DIARIZATION_ENGINE_PIPELINE_WINDOWS_H_
#define DIARIZATION_ENGINE_PIPELINE_WINDOWS_H_

#include <cstdint>
#include <vector>

#include "engine/pipeline/config.h"

namespace diarization::pipeline {

// The samples of a recording that window w holds: [begin, end), followed by
// zeros up to kWindowSamples (the zero-padded last window, §2). Empty
// (begin == end == num_samples) when the window starts at or after
// num_samples. The one definition of a window's audio: the engine's batches
// (engine/runtime/batch_windows) and the offline networks pass copy these
// samples and nothing else.
struct WindowRange {
  int64_t begin = 0;
  int64_t end = 0;
};
// `num_samples` is what is known of the recording so far (a stream's windows
// are cut as its audio arrives); windows start every `step_samples`.
WindowRange WindowSampleRange(int64_t step_samples, int64_t num_samples, int w);

// Window layout for N samples (§2): full windows every step, plus one
// zero-padded last window when samples remain.
struct WindowLayout {
  int64_t num_samples = 0;
  int64_t step_samples = kDefaultStepSamples;
  int num_windows = 0;
  // Start sample of window w; the window covers [start, start + 160000),
  // zero-padded past num_samples.
  int64_t window_start(int w) const { return step_samples * w; }
  WindowRange window_range(int w) const {
    return WindowSampleRange(step_samples, num_samples, w);
  }
};
WindowLayout ComputeWindows(int64_t num_samples, const PipelineConfig& config);

// pyannote.core SlidingWindow(start=0, duration=d, step=s).closest_frame(t):
// int(rint((t - d/2) / s)).
int64_t ClosestFrame(double t_s);

// Middle of frame i, ½(i·s + (i·s + d)), float64 as pyannote computes it.
double FrameMiddle(int64_t i);

// Where each window lands on the global frame grid (pyannote `aggregate`).
struct FrameGrid {
  int num_frames = 0;              // F
  std::vector<int> window_offset;  // o_w, first frame of window w
};
// `step_s` is the windows' SlidingWindow step (step_samples / 16000).
FrameGrid ComputeFrameGrid(int num_windows, double step_s);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_WINDOWS_H_
