// libFuzzer target over the audio decoders: DecodeFile (libsndfile, libmpg123),
// DecodePcm and StreamDecoder (chunked). Built and run by
// audio_fuzz_test.sh; any crash, sanitizer report or leak fails the test.
//
// Input layout: byte 0 selects the decoder, the next bytes pick the format
// (and chunk sizes); the rest is the audio.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/audio/audio.h"

namespace {

using diarization::audio::DecodeFile;
using diarization::audio::DecodeLimits;
using diarization::audio::DecodePcm;
using diarization::audio::PcmEncoding;
using diarization::audio::PcmFormat;
using diarization::audio::StreamDecoder;

// Small limits keep each run fast; the code paths are the same.
constexpr DecodeLimits kLimits{.max_duration_s = 30.0};

// Picks a format from two bytes: mostly valid rates and channel counts,
// sometimes absurd ones (the validation must refuse them).
PcmFormat PickFormat(uint8_t a, uint8_t b) {
  static constexpr int kRates[] = {16000,  8000,  44100, 48000, 22050,
                                   192000, 11025, 0,     7999,  200000};
  static constexpr PcmEncoding kEncodings[] = {
      PcmEncoding::kLinear16, PcmEncoding::kFloat32, PcmEncoding::kMulaw,
      PcmEncoding::kAlaw};
  PcmFormat format;
  format.encoding = kEncodings[(a & 1) | ((b & 0x80) >> 6)];
  format.sample_rate_hz = kRates[(a >> 1) % 10];
  format.channel_count = static_cast<int>(b % 40);
  return format;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const auto bytes = std::as_bytes(std::span(data, size));
  const uint8_t mode = data[0] % 3;
  if (mode == 0) {
    (void)DecodeFile(bytes.subspan(1), kLimits);
    return 0;
  }
  const PcmFormat format = PickFormat(data[1], data[2]);
  const auto audio = bytes.subspan(3);
  if (mode == 1) {
    (void)DecodePcm(audio, format, kLimits);
    return 0;
  }
  auto decoder = StreamDecoder::Create(format, kLimits);
  if (!decoder.ok()) return 0;
  std::vector<float> out;
  // Chunk sizes from the audio's own bytes, so chunking is fuzzed too.
  size_t at = 0;
  while (at < audio.size()) {
    const size_t n = 1 + std::to_integer<size_t>(audio[at]) * 7 % 4099;
    const size_t take = n < audio.size() - at ? n : audio.size() - at;
    if (!(*decoder)->Push(audio.subspan(at, take), out).ok()) return 0;
    at += take;
  }
  (void)(*decoder)->Finish(out);
  return 0;
}
