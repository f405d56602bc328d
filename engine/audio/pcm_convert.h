// Sample conversion and down-mixing shared by the decoders (internal to
// engine/audio).
#ifndef DIARIZATION_ENGINE_AUDIO_PCM_CONVERT_H_
#define DIARIZATION_ENGINE_AUDIO_PCM_CONVERT_H_

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "engine/audio/audio.h"

namespace diarization::audio {

// Bytes of one sample of `encoding`.
size_t BytesPerSample(PcmEncoding encoding);

// Converts whole interleaved little-endian frames to float (LINEAR16 as
// int16 / 32768, the way torchaudio and pyannote load 16-bit audio; MULAW
// and ALAW through libsndfile's G.711 expansion, also / 32768) and
// appends their channel average (`channel_index` kDownmix) or channel
// `channel_index` to `mono`. `bytes.size()` must be a multiple of the frame
// size. Fails, appending nothing, on a NaN or infinite sample in any
// channel; `first_frame` numbers the frames in that message.
absl::Status AppendMonoFromPcm(std::span<const std::byte> bytes,
                               PcmEncoding encoding, int channel_count,
                               int channel_index, int64_t first_frame,
                               std::vector<float>& mono);

// Appends the channel average (or channel `channel_index`) of interleaved
// float frames to `mono`. Fails, appending nothing, on a NaN or infinite
// sample.
absl::Status AppendMonoFromInterleaved(std::span<const float> interleaved,
                                       int channel_count, int channel_index,
                                       int64_t first_frame,
                                       std::vector<float>& mono);

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_PCM_CONVERT_H_
