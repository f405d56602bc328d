// Audio input: decode, down-mix, resample to 16 kHz mono float32, validate.
//
// Every decoder returns float32 samples in [-1, 1] (int16 / 32768, as
// pyannote and torchaudio load them), mono (channels averaged), at 16 kHz
// (torchaudio's windowed-sinc kernel, as pyannote, when the input rate
// differs: resampler.h). Errors are
// InvalidArgument with a reason a client can act on (empty, truncated,
// unsupported encoding, absurd sample rate, NaN/Inf samples, too long).
#ifndef DIARIZATION_ENGINE_AUDIO_AUDIO_H_
#define DIARIZATION_ENGINE_AUDIO_AUDIO_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/common/crop_edges.h"
#include "engine/common/shapes.h"

namespace diarization::audio {

// Decoded audio is at kSampleRateHz (engine/common/shapes.h).

// A channel index that means "average every channel" (PcmFormat,
// FileDecoder::SelectChannel).
inline constexpr int kDownmix = -1;

// What the decoders accept, as named in error messages (every refusal of a
// format lists them) and in GetInfo.
inline constexpr char kAcceptedRawEncodings[] =
    "LINEAR16, FLOAT32 (little-endian), MULAW, ALAW (G.711)";
inline constexpr char kAcceptedContainers[] =
    "WAV (PCM 16/24/32-bit, float32, G.711 mu-law or A-law), FLAC, "
    "OGG/Vorbis, OGG/Opus, MP3";

// One entry per accepted input: "file: <container>" for encoded files and
// "raw: <encoding>" for raw audio (ServerInfo.accepted_formats).
std::vector<std::string> AcceptedFormats();

enum class PcmEncoding {
  kLinear16,  // signed 16-bit little-endian
  kFloat32,   // IEEE float32 little-endian, nominally in [-1, 1]
  kMulaw,     // G.711 μ-law, one byte a sample (telephony)
  kAlaw,      // G.711 A-law, one byte a sample (telephony)
};

struct PcmFormat {
  PcmEncoding encoding = PcmEncoding::kLinear16;
  int sample_rate_hz = kSampleRateHz;
  int channel_count = 1;
  // kDownmix: the channels' average (pyannote's "downmix"); else the one
  // channel (0-based, below channel_count) that is decoded.
  int channel_index = kDownmix;
};

struct DecodeLimits {
  // Longest accepted input, in seconds of audio.
  double max_duration_s = 4.0 * 3600.0;
  int min_sample_rate_hz = 8000;
  int max_sample_rate_hz = 192000;
  int max_channel_count = 32;
};

// Mono float32 samples at kSampleRateHz.
struct Waveform {
  std::vector<float> samples;
  // For input at another rate: what pyannote's embedding crops see near
  // their ends (crop_edges.h); empty at 16 kHz.
  CropEdges crop_edges;
  // What the input was, for logs and results.
  int source_sample_rate_hz = kSampleRateHz;
  int source_channel_count = 1;

  double duration_s() const {
    return static_cast<double>(samples.size()) / kSampleRateHz;
  }
};

// Bounds on one decode's work, checked every block (about 8192 input frames,
// or 1 MiB of raw PCM), so that a decode of hostile input stops within
// milliseconds of its bound instead of running to the end of the input.
struct DecodeControl {
  // Polled every block; true stops the decode with CANCELLED (the caller
  // left). Must be cheap and thread-safe. Null: never.
  std::function<bool()> cancelled;
  // Past it the decode stops with DEADLINE_EXCEEDED.
  absl::Time deadline = absl::InfiniteFuture();
  // CPU seconds the decoding thread may spend on this decode
  // (CLOCK_THREAD_CPUTIME_ID); past it RESOURCE_EXHAUSTED. 0 = unbounded.
  double max_cpu_s = 0.0;
};

// What a container file announces about itself, read without decoding
// (FileDecoder::Open).
struct FileHeader {
  // "WAV", "FLAC", "OGG" or "MP3".
  std::string container;
  int sample_rate_hz = 0;
  int channel_count = 0;
  // Seconds the header announces; nullopt when it does not say (a FLAC
  // stream written without a total sample count). Untrusted: the decode
  // stops at DecodeLimits::max_duration_s whatever the header said. For
  // MP3, the count of its frames' samples (every frame header is read).
  std::optional<double> duration_s;
  size_t file_bytes = 0;
};

// A container file held in memory, opened and its header checked (sniffed
// as WAV/FLAC/OGG first: nothing else reaches libsndfile; MP3 goes to
// libmpg123's own API, mp3_decoder.h), not yet decoded. The bytes must outlive
// the decoder. Lets a caller check the announced duration against admission
// before spending any decode time (server/diarize_file_reactor.cc).
class FileDecoder {
 public:
  static absl::StatusOr<std::unique_ptr<FileDecoder>> Open(
      std::span<const std::byte> bytes, const DecodeLimits& limits = {});
  virtual ~FileDecoder() = default;

  virtual const FileHeader& header() const = 0;

  // Decode only channel `index` (0-based) instead of the channels' average
  // (kDownmix, the default). INVALID_ARGUMENT when the file has no such
  // channel. Call before Decode.
  absl::Status SelectChannel(int index);

  // Decodes, down-mixes and resamples everything, at most `max_duration_s`
  // seconds of input (further bounded by the limits given to Open); more is
  // INVALID_ARGUMENT "too long". Memory reserved up front never exceeds that
  // bound, whatever the header says. Call once.
  virtual absl::StatusOr<Waveform> Decode(double max_duration_s,
                                          const DecodeControl& control) = 0;

 protected:
  // SelectChannel's choice, for Decode.
  int channel_index_ = kDownmix;
};

// Checks a raw PCM format against the limits (rate, channels) and its
// channel_index against its channel count.
absl::Status ValidatePcmFormat(const PcmFormat& format,
                               const DecodeLimits& limits = {});

// Decodes a container file held in memory through libsndfile: WAV (also
// WAVEX and RF64) with PCM 16/24/32-bit, float32, G.711 mu-law or A-law
// samples, FLAC, OGG/Vorbis (and OGG/Opus). Other containers and encodings
// libsndfile knows (AIFF, 8-bit, ADPCM ...) and those it does not
// (MP4/M4A, AAC) are refused as unsupported, with kAcceptedContainers.
// MP3 (an ID3v2 tag or an MPEG audio frame first) is decoded by libmpg123,
// quietly and under the same limits and control. A WAV whose data chunk
// runs past the end of the input, a FLAC stream that ends before the frames
// its header announces, or an OGG stream without its end-of-stream page is
// "truncated"; a file with no samples fails. FileDecoder::Open + Decode.
absl::StatusOr<Waveform> DecodeFile(std::span<const std::byte> bytes,
                                    const DecodeLimits& limits = {},
                                    const DecodeControl& control = {});

// Reads and decodes a file from disk.
absl::StatusOr<Waveform> DecodeFilePath(const std::string& path,
                                        const DecodeLimits& limits = {});

// Decodes raw interleaved PCM. The byte count must be a whole number of
// frames (sample size × channels).
absl::StatusOr<Waveform> DecodePcm(std::span<const std::byte> bytes,
                                   const PcmFormat& format,
                                   const DecodeLimits& limits = {},
                                   const DecodeControl& control = {});

// Incremental decoder for streams: raw PCM chunks in, 16 kHz mono samples out
// as soon as the resampler can produce them. Keeps a partial frame between
// chunks. Finish() flushes the resampler's tail.
class StreamDecoder {
 public:
  static absl::StatusOr<std::unique_ptr<StreamDecoder>> Create(
      const PcmFormat& format, const DecodeLimits& limits = {});
  virtual ~StreamDecoder() = default;

  // Appends decoded 16 kHz mono samples to `out`, and for input at another
  // rate the crop edges that come with them to `edges` (crop_edges.h; when
  // not null). Fails on NaN/Inf or when the total would exceed
  // limits.max_duration_s.
  virtual absl::Status Push(std::span<const std::byte> bytes,
                            std::vector<float>& out, CropEdges* edges) = 0;
  absl::Status Push(std::span<const std::byte> bytes, std::vector<float>& out) {
    return Push(bytes, out, nullptr);
  }
  // Flushes, with the last crop edges; fails if a partial frame is left
  // over.
  virtual absl::Status Finish(std::vector<float>& out, CropEdges* edges) = 0;
  absl::Status Finish(std::vector<float>& out) { return Finish(out, nullptr); }
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_AUDIO_H_
