// MP3 (MPEG-1/2/2.5 audio, layers I-III) through libmpg123's own API
// (internal to engine/audio; FileDecoder::Open dispatches here).
//
// Not through libsndfile: libsndfile hands MP3 to libmpg123 with its
// printouts on and no bound on the work. Here libmpg123 is quiet
// (MPG123_QUIET: nothing on stderr), reads from memory, skips ID3v2 tags
// unparsed, and the decode runs under the same DecodeLimits and
// DecodeControl (bounded length, cancellation, deadline, CPU budget,
// checked every block) as the libsndfile containers.
#ifndef DIARIZATION_ENGINE_AUDIO_MP3_DECODER_H_
#define DIARIZATION_ENGINE_AUDIO_MP3_DECODER_H_

#include <cstddef>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "engine/audio/audio.h"

namespace diarization::audio {

// True when the bytes start like MP3: an ID3v2 tag or an MPEG audio frame
// header (11 sync bits and a layer other than 00, which is AAC's ADTS).
bool LooksLikeMp3(std::span<const std::byte> bytes);

// Opens MP3 bytes: finds the first frame (its rate and channel count) and
// counts the frames (mpg123_scan reads only frame headers), so that the
// header's duration is the stream's real length, not what a Xing tag or
// the file size claims. Refuses streams longer than the limits here,
// before any decoding. The bytes must outlive the decoder.
absl::StatusOr<std::unique_ptr<FileDecoder>> OpenMp3(
    std::span<const std::byte> bytes, const DecodeLimits& limits);

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_MP3_DECODER_H_
