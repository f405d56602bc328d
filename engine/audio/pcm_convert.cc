#include "engine/audio/pcm_convert.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/audio/g711.h"

namespace diarization::audio {
namespace {

absl::Status NonFiniteError(int64_t frame, int channel, float value) {
  return absl::InvalidArgumentError(
      absl::StrCat("audio sample at frame ", frame, ", channel ", channel,
                   " is ", std::isnan(value) ? "NaN" : "infinite",
                   "; samples must be finite numbers"));
}

float LoadLinear16(const std::byte* p) {
  const uint16_t bits = static_cast<uint16_t>(std::to_integer<uint8_t>(p[0])) |
                        static_cast<uint16_t>(std::to_integer<uint8_t>(p[1]))
                            << 8;
  return static_cast<float>(static_cast<int16_t>(bits)) / 32768.0f;
}

float LoadFloat32(const std::byte* p) {
  uint32_t bits = 0;
  for (int i = 3; i >= 0; --i) {
    bits = (bits << 8) | std::to_integer<uint8_t>(p[i]);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace

size_t BytesPerSample(PcmEncoding encoding) {
  switch (encoding) {
    case PcmEncoding::kLinear16:
      return 2;
    case PcmEncoding::kFloat32:
      return 4;
    case PcmEncoding::kMulaw:
    case PcmEncoding::kAlaw:
      return 1;
  }
  return 0;
}

absl::Status AppendMonoFromPcm(std::span<const std::byte> bytes,
                               PcmEncoding encoding, int channel_count,
                               int channel_index, int64_t first_frame,
                               std::vector<float>& mono) {
  const size_t sample_bytes = BytesPerSample(encoding);
  const size_t frame_bytes = sample_bytes * channel_count;
  const size_t frames = bytes.size() / frame_bytes;
  const size_t old_size = mono.size();
  mono.reserve(old_size + frames);
  const std::array<float, 256>* g711 =
      encoding == PcmEncoding::kMulaw || encoding == PcmEncoding::kAlaw
          ? &G711Table(encoding)
          : nullptr;
  const std::byte* p = bytes.data();
  for (size_t f = 0; f < frames; ++f) {
    // Average in double: exact for the int16 sum, and as close as float
    // allows otherwise.
    double sum = 0.0;
    float chosen = 0.0f;
    for (int c = 0; c < channel_count; ++c, p += sample_bytes) {
      const float value = g711 != nullptr
                              ? (*g711)[std::to_integer<uint8_t>(*p)]
                          : encoding == PcmEncoding::kLinear16 ? LoadLinear16(p)
                                                               : LoadFloat32(p);
      if (!std::isfinite(value)) {
        mono.resize(old_size);
        return NonFiniteError(first_frame + static_cast<int64_t>(f), c, value);
      }
      sum += value;
      if (c == channel_index) chosen = value;
    }
    if (channel_index != kDownmix) {
      mono.push_back(chosen);
      continue;
    }
    mono.push_back(channel_count == 1
                       ? static_cast<float>(sum)
                       : static_cast<float>(sum / channel_count));
  }
  return absl::OkStatus();
}

absl::Status AppendMonoFromInterleaved(std::span<const float> interleaved,
                                       int channel_count, int channel_index,
                                       int64_t first_frame,
                                       std::vector<float>& mono) {
  const size_t frames = interleaved.size() / channel_count;
  const size_t old_size = mono.size();
  mono.reserve(old_size + frames);
  const float* p = interleaved.data();
  for (size_t f = 0; f < frames; ++f) {
    double sum = 0.0;
    for (int c = 0; c < channel_count; ++c, ++p) {
      if (!std::isfinite(*p)) {
        mono.resize(old_size);
        return NonFiniteError(first_frame + static_cast<int64_t>(f), c, *p);
      }
      sum += *p;
    }
    if (channel_index != kDownmix) {
      mono.push_back(p[channel_index - channel_count]);
      continue;
    }
    mono.push_back(channel_count == 1
                       ? static_cast<float>(sum)
                       : static_cast<float>(sum / channel_count));
  }
  return absl::OkStatus();
}

}  // namespace diarization::audio
