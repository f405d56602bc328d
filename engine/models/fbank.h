// Kaldi-compatible log-mel filterbank as pyannote's WeSpeaker wrapper calls it
// (../shared/specs/models.md §3): torchaudio.compliance.kaldi.fbank with
// num_mel_bins=80, frame_length=25 ms, frame_shift=10 ms, snip_edges, dither 0,
// hamming window, pre-emphasis 0.97, DC removal, power spectrum, log, then
// pyannote's per-chunk mean normalisation over frames.
//
// Precision: every step torchaudio runs in float32 is run here in float32, in
// torchaudio's order (scale, frame mean, pre-emphasis with replicate padding,
// symmetric Hamming window, power = |X|^2, mel product, log with the float
// epsilon floor). The DFT itself is computed in double precision (FFTW) and
// rounded to float: torch's float32 FFT carries its own rounding, and a
// double DFT keeps ours out of the comparison (quiet mel bands are sensitive
// to FFT rounding).
#ifndef DIARIZATION_ENGINE_MODELS_FBANK_H_
#define DIARIZATION_ENGINE_MODELS_FBANK_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/common/shapes.h"

namespace diarization::models {

// The mel bins are kFbankMelBins (engine/common/shapes.h).
inline constexpr int kFbankWindowSamples = 400;  // 25 ms at 16 kHz
inline constexpr int kFbankShiftSamples = 160;   // 10 ms
inline constexpr int kFbankFftSize = 512;
static_assert(kFbankWindowSamples * 1000 == 25 * kSampleRateHz);
static_assert(kFbankShiftSamples * 1000 == 10 * kSampleRateHz);

// Frames for `num_samples` samples with snip_edges (0 when < 400).
constexpr int FbankFrames(int num_samples) {
  return num_samples < kFbankWindowSamples
             ? 0
             : 1 + (num_samples - kFbankWindowSamples) / kFbankShiftSamples;
}

// Immutable after Create; Compute is thread-safe.
class Fbank {
 public:
  static absl::StatusOr<std::unique_ptr<Fbank>> Create();
  ~Fbank();
  Fbank(const Fbank&) = delete;
  Fbank& operator=(const Fbank&) = delete;

  // samples: float32 audio in [-1, 1] (scaled by 2^15 inside, as pyannote
  // does). out: FbankFrames(samples.size()) × 80, row-major (frame, mel),
  // mean-normalised over frames. InvalidArgument when fewer than 400 samples
  // or `out` has the wrong size.
  absl::Status Compute(std::span<const float> samples,
                       std::span<float> out) const;

  // The mel filterbank, 80 × 257 (the Nyquist column is zero), float32 as
  // torchaudio's get_mel_banks computes it. For tests.
  std::span<const float> mel_banks() const { return mel_banks_; }
  // The symmetric Hamming window (400), float32 as torch.hamming_window.
  std::span<const float> window() const { return window_; }

 private:
  Fbank() = default;
  struct Plan;
  std::unique_ptr<Plan> plan_;
  std::vector<float> window_;
  std::vector<float> mel_banks_;  // (80, 257)
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FBANK_H_
