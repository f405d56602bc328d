// Streaming resampler to kSampleRateHz: torchaudio's windowed-sinc kernel.
//
// pyannote.audio 4.0 resamples with torchaudio.functional.resample at its
// defaults (sinc_interp_hann, lowpass_filter_width 6, rolloff 0.99): the whole
// recording for segmentation, each embedding window's crop separately from
// the original-rate audio (pyannote/audio/core/io.py, Audio.crop). To give
// pyannote's answer at every rate the service resamples with the same kernel,
// computed here from torchaudio's published definition
// (torchaudio/functional/functional.py, _get_sinc_resample_kernel and
// _apply_sinc_resample_kernel, torchaudio 2.8). Written by hand because no
// C or C++ library computes this kernel: soxr and libsamplerate are better
// filters, but not the same one, and the difference moves pyannote's answer
// (issue 41: DER 0.5–42 % at 44.1 kHz).
//
// The definition. With g = gcd(in, out), o = in / g and n = out / g, base =
// min(o, n) · 0.99 and width w = ceil(6 · o / base), output sample j (block
// b = j / n, phase p = j % n) is
//   y[j] = Σ_{k=0}^{2w+o−1} K[p][k] · x[b·o − w + k],
// x zero outside the recording, with
//   t = clamp(((k − w) / o − p / n) · base, −6, 6),
//   K[p][k] = sinc(π t) · cos²(π t / 12) · base / o,
// and a recording of N input samples gives ceil(n · N / o) outputs.
//
// Crops. pyannote's embedding windows are crops of the original-rate audio
// (10 s, on whole seconds), each resampled alone: zero before its start and
// after its end. A crop starting at a whole second k (input k·rate, output
// 16000k: k·rate is a multiple of o) therefore equals the resampled
// recording except in the few outputs whose taps reach across its ends, and
// past the recording's end, where the recording's outputs stop at its count
// while a crop running past it keeps the filter's tail. The resampler
// computes those outputs as it goes (CropEdges, audio.h) with the same
// function and summation order as every other output, so that a crop
// assembled from the resampled recording and its edges is what torchaudio
// gives for the crop (//engine/audio:resampler_test).
//
// Internal to engine/audio and its tests: the whole-file decoders and
// StreamDecoder share it, so a file and the same audio streamed in chunks
// give the same samples and edges.
#ifndef DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_
#define DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/common/crop_edges.h"
#include "engine/common/shapes.h"

namespace diarization::audio {

// torchaudio's polyphase kernel for one pair of rates, with each phase's
// taps cut to where the Hann window is not zero (|t| < 6; torchaudio's own
// taps there are below 1e-20 of the peak).
class SincKernel {
 public:
  // Both rates positive and different.
  static absl::StatusOr<SincKernel> Create(int input_rate_hz,
                                           int output_rate_hz);

  int input_step() const { return input_step_; }    // o
  int output_step() const { return output_step_; }  // n

  // Number of outputs torchaudio gives for `num_inputs` input samples:
  // ceil(n · N / o).
  int64_t OutputCount(int64_t num_inputs) const;
  // The input samples output j reads: [FirstInput(j), LastInput(j)].
  int64_t FirstInput(int64_t j) const;
  int64_t LastInput(int64_t j) const;
  // How many outputs on each side of a whole second read inputs on both
  // sides of it (the same for every second: the kernel's period divides
  // both rates): CropEdges::margin.
  int crop_margin() const { return crop_margin_; }

  // Output j of the signal whose samples [begin, begin + x.size()) are `x`
  // and which is zero before `zero_before` and from `zero_from` on. The
  // caller's `x` covers [FirstInput(j), LastInput(j)] ∩ [zero_before,
  // zero_from). The same inputs give the same output bit for bit, whatever
  // the span (one summation order).
  float Output(std::span<const float> x, int64_t begin, int64_t zero_before,
               int64_t zero_from, int64_t j) const;

 private:
  SincKernel() = default;

  int input_step_ = 0;
  int output_step_ = 0;
  int width_ = 0;
  int crop_margin_ = 0;
  // Phase p's non-zero taps are taps_[offset_[p], offset_[p] + count_[p])
  // and apply to x[b·o − w + first_[p] + i].
  std::vector<float> taps_;
  std::vector<int> offset_;
  std::vector<int> first_;
  std::vector<int> count_;
};

class Resampler {
 public:
  // `input_rate_hz` must be positive; equal to 16000 gives a pass-through.
  static absl::StatusOr<std::unique_ptr<Resampler>> Create(int input_rate_hz);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Appends what the resampler can already produce for `input` to `out`,
  // and to `edges` (when not null) the crop edges of every whole second
  // whose last output it appended (CropEdges: an output reaches `out` only
  // once the edges of its second can be computed, 1 ms of input later).
  // Nothing is appended to `edges` at 16 kHz.
  absl::Status Process(std::span<const float> input, std::vector<float>& out,
                       CropEdges* edges = nullptr);
  // Ends the input and appends the remaining output, so that N input
  // samples give exactly ceil(16000 · N / rate) outputs in all, and the
  // remaining crop edges and past_end. Call once.
  absl::Status Flush(std::vector<float>& out, CropEdges* edges = nullptr);

  // CropEdges::margin for this rate (0 at 16 kHz).
  int margin() const { return margin_; }

 private:
  Resampler(int input_rate_hz, std::shared_ptr<const SincKernel> kernel);
  // Appends outputs [next_output_, end) to `out` and the edges of every
  // second they complete to `edges`; inputs from `zero_from` on are zero
  // (the end of the recording when flushing).
  void Emit(int64_t end, int64_t zero_from, std::vector<float>& out,
            CropEdges* edges);
  // Appends second k's edges (CropEdges::seconds) to `edges`.
  void AppendSecond(int64_t k, int64_t zero_from, CropEdges* edges) const;

  std::shared_ptr<const SincKernel> kernel_;  // null: pass-through
  int64_t input_rate_hz_ = kSampleRateHz;
  const int margin_;         // kernel_->crop_margin(), 0 for the pass-through
  int64_t next_second_ = 0;  // the next second whose edges are due
  // Input samples [buffer_begin_, received_).
  std::vector<float> buffer_;
  int64_t buffer_begin_ = 0;
  int64_t received_ = 0;
  int64_t next_output_ = 0;
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_RESAMPLER_H_
