#include "engine/audio/g711.h"

#include <sndfile.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/audio/sndfile_memory.h"

namespace diarization::audio {
namespace {

// Decodes the bytes 0..255 as headerless G.711 through libsndfile rather
// than a hand-written expansion: the WAV path decodes through libsndfile
// too, so both paths agree to the bit.
std::array<float, 256> BuildTable(int sndfile_encoding) {
  std::array<std::byte, 256> codes;
  for (int i = 0; i < 256; ++i) codes[i] = static_cast<std::byte>(i);
  MemoryFile memory{.bytes = codes};
  SF_VIRTUAL_IO io = MemoryFileIo();
  SF_INFO info;
  std::memset(&info, 0, sizeof(info));
  info.samplerate = 8000;
  info.channels = 1;
  info.format = SF_FORMAT_RAW | sndfile_encoding;
  std::unique_ptr<SNDFILE, SndfileCloser> file(
      sf_open_virtual(&io, SFM_READ, &info, &memory));
  std::array<short, 256> values{};
  // Only a broken libsndfile install fails here; no input can cause it.
  if (file == nullptr ||
      sf_readf_short(file.get(), values.data(), 256) != 256) {
    std::abort();
  }
  std::array<float, 256> table;
  for (int i = 0; i < 256; ++i) table[i] = values[i] / 32768.0f;
  return table;
}

}  // namespace

const std::array<float, 256>& G711Table(PcmEncoding encoding) {
  static const std::array<float, 256> mulaw = BuildTable(SF_FORMAT_ULAW);
  static const std::array<float, 256> alaw = BuildTable(SF_FORMAT_ALAW);
  return encoding == PcmEncoding::kAlaw ? alaw : mulaw;
}

}  // namespace diarization::audio
