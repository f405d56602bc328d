// FLAC format: https://xiph.org/flac/format.html (RFC 9639).
#include "testing/silent_flac.h"

#include <cmath>
#include <string>
#include <vector>

namespace diarization::testing {
namespace {

uint8_t Crc8(const std::string& data, size_t from) {
  uint8_t crc = 0;
  for (size_t i = from; i < data.size(); ++i) {
    crc ^= static_cast<uint8_t>(data[i]);
    for (int b = 0; b < 8; ++b) {
      crc = static_cast<uint8_t>((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
    }
  }
  return crc;
}

uint16_t Crc16(const std::string& data, size_t from) {
  uint16_t crc = 0;
  for (size_t i = from; i < data.size(); ++i) {
    crc ^= static_cast<uint16_t>(static_cast<uint8_t>(data[i])) << 8;
    for (int b = 0; b < 8; ++b) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x8005
                                                 : crc << 1);
    }
  }
  return crc;
}

void PutBits(std::vector<bool>& bits, uint64_t value, int n) {
  for (int i = n - 1; i >= 0; --i) bits.push_back((value >> i) & 1);
}

std::string Pack(const std::vector<bool>& bits) {
  std::string out((bits.size() + 7) / 8, '\0');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) out[i / 8] = static_cast<char>(out[i / 8] | (0x80 >> (i % 8)));
  }
  return out;
}

// The frame number, coded like UTF-8 (up to 31 bits here).
void PutUtf8(std::string& out, uint32_t v) {
  if (v < 0x80) {
    out += static_cast<char>(v);
    return;
  }
  int extra = v < 0x800       ? 1
              : v < 0x10000   ? 2
              : v < 0x200000  ? 3
              : v < 0x4000000 ? 4
                              : 5;
  const uint8_t lead_marks[] = {0, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC};
  out += static_cast<char>(lead_marks[extra] | (v >> (6 * extra)));
  for (int i = extra - 1; i >= 0; --i) {
    out += static_cast<char>(0x80 | ((v >> (6 * i)) & 0x3F));
  }
}

}  // namespace

std::string SilentFlac(const SilentFlacOptions& o) {
  const uint64_t total =
      static_cast<uint64_t>(std::llround(o.seconds * o.sample_rate_hz));
  std::string out = "fLaC";
  // STREAMINFO, the last (only) metadata block: 34 bytes.
  out += static_cast<char>(0x80);
  out += std::string("\x00\x00\x22", 3);
  std::vector<bool> info;
  PutBits(info, o.block_size, 16);  // min block size
  PutBits(info, o.block_size, 16);  // max block size
  PutBits(info, 0, 24);             // min frame size: unknown
  PutBits(info, 0, 24);             // max frame size: unknown
  PutBits(info, o.sample_rate_hz, 20);
  PutBits(info, o.channel_count - 1, 3);
  PutBits(info, 16 - 1, 5);
  PutBits(info, o.announce_length ? total : 0, 36);
  PutBits(info, 0, 64);  // MD5: unknown (not checked)
  PutBits(info, 0, 64);
  out += Pack(info);

  uint32_t frame = 0;
  for (uint64_t done = 0; done < total; ++frame) {
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>(o.block_size, total - done));
    const size_t start = out.size();
    out += static_cast<char>(0xFF);
    out += static_cast<char>(0xF8);  // fixed block size
    // Block size: 16 bits (n - 1) after the frame number; sample rate: from
    // STREAMINFO.
    out += static_cast<char>(0x70);
    // Independent channels; 16-bit samples.
    out += static_cast<char>(((o.channel_count - 1) << 4) | (0x4 << 1));
    PutUtf8(out, frame);
    out += static_cast<char>((n - 1) >> 8);
    out += static_cast<char>((n - 1) & 0xFF);
    out += static_cast<char>(Crc8(out, start));
    for (int c = 0; c < o.channel_count; ++c) {
      out += '\0';                  // CONSTANT subframe, no wasted bits
      out += std::string(2, '\0');  // the value: 0
    }
    const uint16_t crc = Crc16(out, start);
    out += static_cast<char>(crc >> 8);
    out += static_cast<char>(crc & 0xFF);
    done += n;
  }
  return out;
}

}  // namespace diarization::testing
