// Audio input: decode, down-mix, resample to 16 kHz mono float32, validate.
//
// Every decoder returns float32 samples in [-1, 1] (int16 / 32768, as
// pyannote and torchaudio load them), mono (channels averaged), at 16 kHz
// (soxr, very-high quality, when the input rate differs). Errors are
// InvalidArgument with a reason a client can act on (empty, truncated,
// unsupported encoding, absurd sample rate, NaN/Inf samples, too long).
#ifndef DIARIZATION_ENGINE_AUDIO_AUDIO_H_
#define DIARIZATION_ENGINE_AUDIO_AUDIO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::audio {

inline constexpr int kTargetSampleRate = 16000;

enum class PcmEncoding {
  kLinear16,  // signed 16-bit little-endian
  kFloat32,   // IEEE float32 little-endian, nominally in [-1, 1]
};

struct PcmFormat {
  PcmEncoding encoding = PcmEncoding::kLinear16;
  int sample_rate_hz = kTargetSampleRate;
  int channel_count = 1;
};

struct DecodeLimits {
  // Longest accepted input, in seconds of audio.
  double max_duration_s = 4.0 * 3600.0;
  int min_sample_rate_hz = 8000;
  int max_sample_rate_hz = 192000;
  int max_channel_count = 32;
};

// Mono float32 samples at kTargetSampleRate.
struct Waveform {
  std::vector<float> samples;
  // What the input was, for logs and results.
  int source_sample_rate_hz = kTargetSampleRate;
  int source_channel_count = 1;

  double duration_s() const {
    return static_cast<double>(samples.size()) / kTargetSampleRate;
  }
};

// Checks a raw PCM format against the limits (rate, channels).
absl::Status ValidatePcmFormat(const PcmFormat& format,
                               const DecodeLimits& limits = {});

// Decodes a container file held in memory through libsndfile: WAV (also
// WAVEX and RF64) with PCM 16/24/32-bit or float32 samples, FLAC, OGG/Vorbis
// (and OGG/Opus). Other containers and encodings libsndfile knows (AIFF,
// 8-bit, A-law, MP3 ...) are refused as unsupported. A WAV whose data chunk
// runs past the end of the input, or a FLAC/OGG stream that ends before the
// frames its header announces, is "truncated"; a file with no samples fails.
absl::StatusOr<Waveform> DecodeFile(std::span<const std::byte> bytes,
                                    const DecodeLimits& limits = {});

// Reads and decodes a file from disk.
absl::StatusOr<Waveform> DecodeFilePath(const std::string& path,
                                        const DecodeLimits& limits = {});

// Decodes raw interleaved PCM. The byte count must be a whole number of
// frames (sample size × channels).
absl::StatusOr<Waveform> DecodePcm(std::span<const std::byte> bytes,
                                   const PcmFormat& format,
                                   const DecodeLimits& limits = {});

// Incremental decoder for streams: raw PCM chunks in, 16 kHz mono samples out
// as soon as the resampler can produce them. Keeps a partial frame between
// chunks. Finish() flushes the resampler's tail.
class StreamDecoder {
 public:
  static absl::StatusOr<std::unique_ptr<StreamDecoder>> Create(
      const PcmFormat& format, const DecodeLimits& limits = {});
  virtual ~StreamDecoder() = default;

  // Appends decoded 16 kHz mono samples to `out`. Fails on NaN/Inf or when the
  // total would exceed limits.max_duration_s.
  virtual absl::Status Push(std::span<const std::byte> bytes,
                            std::vector<float>& out) = 0;
  // Flushes; fails if a partial frame is left over.
  virtual absl::Status Finish(std::vector<float>& out) = 0;
  // Seconds of input consumed so far.
  virtual double input_duration_s() const = 0;
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_AUDIO_H_
