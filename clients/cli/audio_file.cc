#include "clients/cli/audio_file.h"

#include <sndfile.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace diarization::client {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return buffer.str();
}

absl::StatusOr<PcmAudio> ReadPcm(const std::string& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot decode ", path, ": ", sf_strerror(nullptr)));
  }
  PcmAudio audio;
  audio.sample_rate_hz = info.samplerate;
  audio.channel_count = info.channels;
  audio.samples.resize(static_cast<size_t>(info.frames) * info.channels);
  const sf_count_t got =
      sf_readf_short(file, audio.samples.data(), info.frames);
  sf_close(file);
  if (got < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot decode ", path));
  }
  audio.samples.resize(static_cast<size_t>(got) * info.channels);
  return audio;
}

}  // namespace diarization::client
