// What pyannote's embedding crops see near their ends
// (engine/audio/resampler.h, "Crops"). Shared by engine/audio, which makes
// them, and engine/runtime, which applies them.
//
// pyannote resamples each embedding window's crop of the original-rate audio
// on its own. Its crops start and end on whole seconds (10 s windows every 1
// or 2 s), and there a crop is the resampled recording except for `margin`
// outputs on each side of its start and end, and past the recording's
// resampled end. The resampler records those outputs as it goes; a window's
// samples cut from the resampled recording become pyannote's crop with
// ApplyCropEdges. Empty (margin 0) for 16 kHz input, which no crop changes.
#ifndef DIARIZATION_ENGINE_COMMON_CROP_EDGES_H_
#define DIARIZATION_ENGINE_COMMON_CROP_EDGES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace diarization {

struct CropEdges {
  // Outputs on each side of a whole second that a crop boundary there can
  // change; 0: nothing to change.
  int margin = 0;
  // 2·margin values for each whole second k = 0, 1, … in order: first
  // outputs 16000k − margin … 16000k − 1 of a crop ending at second k, then
  // outputs 16000k … 16000k + margin − 1 of a crop starting there.
  std::vector<float> seconds;
  // The outputs from the recording's resampled end (its sample count) on
  // that a crop running past the end sees; the recording itself stops
  // there. Set at the end of the input.
  std::vector<float> past_end;
  // The input has ended: past_end is set, and the edges of every second
  // past the known ones are zero (the recording is silent there).
  bool finished = false;

  bool empty() const { return margin == 0; }
  // Whole seconds whose edges are known.
  int64_t known_seconds() const {
    return margin == 0 ? 0
                       : static_cast<int64_t>(seconds.size()) / (2 * margin);
  }
  size_t bytes() const {
    return (seconds.capacity() + past_end.capacity()) * sizeof(float);
  }
  // Appends `more` (the next seconds, and past_end once): how a job collects
  // a stream's edges chunk by chunk.
  void Append(const CropEdges& more);
};

// Turns `window`, samples [16000·start_s, 16000·start_s + window.size()) of
// the resampled recording (`recording_samples` long, zero past it), into
// what resampling the crop [start_s, start_s + window.size() / 16000) of the
// original audio alone gives. `start_s` and the crop's end must be whole
// seconds whose edges are known, or past the recording's end once past_end
// is set; returns false (window untouched or partly patched) otherwise.
bool ApplyCropEdges(const CropEdges& edges, int64_t recording_samples,
                    int64_t start_s, std::span<float> window);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_CROP_EDGES_H_
