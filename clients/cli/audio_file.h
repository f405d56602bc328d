// Reads an audio file for the client: its bytes as they are (for DiarizeFile
// with ENCODED), or its samples as 16-bit PCM at the file's own rate and
// channel count (for a Diarize stream, which takes raw PCM; the server
// resamples and down-mixes).
#ifndef DIARIZATION_CLIENTS_CLI_AUDIO_FILE_H_
#define DIARIZATION_CLIENTS_CLI_AUDIO_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::client {

struct PcmAudio {
  // Interleaved signed 16-bit samples.
  std::vector<int16_t> samples;
  int sample_rate_hz = 0;
  int channel_count = 0;

  int64_t frames() const {
    return channel_count > 0
               ? static_cast<int64_t>(samples.size()) / channel_count
               : 0;
  }
  double duration_s() const {
    return sample_rate_hz > 0 ? static_cast<double>(frames()) / sample_rate_hz
                              : 0.0;
  }
};

// The file's bytes.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// Decodes WAV/FLAC/OGG (anything libsndfile reads) to 16-bit PCM.
absl::StatusOr<PcmAudio> ReadPcm(const std::string& path);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_AUDIO_FILE_H_
