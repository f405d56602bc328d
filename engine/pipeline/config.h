// Constants and configuration of the host pipeline (pyannote
// speaker-diarization-community-1, ../shared/specs/pipeline.md §0).
#ifndef DIARIZATION_ENGINE_PIPELINE_CONFIG_H_
#define DIARIZATION_ENGINE_PIPELINE_CONFIG_H_

#include <cstdint>

namespace diarization::pipeline {

inline constexpr int kSampleRateHz = 16000;
inline constexpr int kWindowSamples = 160000;
inline constexpr int kFramesPerWindow = 589;
inline constexpr int kLocalSpeakers = 3;
inline constexpr int kEmbeddingDim = 256;
inline constexpr int kPowersetClasses = 7;

// Frame grid of segmentation-3.0's receptive field (SlidingWindow start 0).
inline constexpr double kFrameDurationS = 0.0619375;
inline constexpr double kFrameStepS = 0.016875;

// Defaults are community-1's ("accurate"). Fast() is the API's FAST mode.
struct PipelineConfig {
  int64_t step_samples = 16000;  // 1 s between window starts
  double ahc_threshold = 0.6;
  double vbx_fa = 0.07;
  double vbx_fb = 0.8;
  int vbx_max_iters = 20;
  double min_duration_off = 0.0;
  bool embedding_exclude_overlap = true;

  static PipelineConfig Accurate() { return {}; }
  static PipelineConfig Fast() {
    PipelineConfig c;
    c.step_samples = 32000;
    c.vbx_max_iters = 10;
    return c;
  }
};

// pyannote's num_speakers / min_speakers / max_speakers; 0 = unset.
struct SpeakerHints {
  int num_speakers = 0;
  int min_speakers = 0;
  int max_speakers = 0;
};

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_CONFIG_H_
