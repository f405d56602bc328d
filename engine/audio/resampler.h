// Streaming resampler to kSampleRateHz (soxr, very-high quality).
//
// Internal to engine/audio: the whole-file decoders and StreamDecoder share
// it, so a file and the same audio streamed in chunks go through one code
// path. soxr removes its filter delay (linear phase), so output sample k is
// at time k / 16000 s of the input.
#ifndef DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_
#define DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/common/shapes.h"

namespace diarization::audio {

class Resampler {
 public:
  // `input_rate_hz` must be positive; equal to 16000 gives a pass-through.
  static absl::StatusOr<std::unique_ptr<Resampler>> Create(int input_rate_hz);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Appends what the resampler can already produce for `input` to `out`.
  absl::Status Process(std::span<const float> input, std::vector<float>& out);
  // Ends the input and appends the remaining output. Call once.
  absl::Status Flush(std::vector<float>& out);

 private:
  Resampler(int input_rate_hz, void* soxr);

  int input_rate_hz_;
  void* soxr_;  // soxr_t, or nullptr for the pass-through.
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_
