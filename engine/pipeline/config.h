// Constants and configuration of the host pipeline (pyannote
// speaker-diarization-community-1, ../shared/specs/pipeline.md §0).
#ifndef DIARIZATION_ENGINE_PIPELINE_CONFIG_H_
#define DIARIZATION_ENGINE_PIPELINE_CONFIG_H_

#include <cstdint>

#include "engine/common/shapes.h"

// The shapes (sample rate, window, frames, speakers, embedding size, frame
// grid) are engine/common/shapes.h's, found from here unqualified.
namespace diarization::pipeline {

// Defaults are community-1's ("accurate"). Fast() is the API's FAST mode.
struct PipelineConfig {
  int64_t step_samples = kDefaultStepSamples;  // 1 s between window starts
  double ahc_threshold = 0.6;
  double vbx_fa = 0.07;
  double vbx_fb = 0.8;
  int vbx_max_iters = 20;
  double min_duration_off = 0.0;
  bool embedding_exclude_overlap = true;

  static PipelineConfig Accurate() { return {}; }
  static PipelineConfig Fast() {
    PipelineConfig c;
    c.step_samples = kFastStepSamples;
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
