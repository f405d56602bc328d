// The three Vorbis headers of an Ogg file, parsed with libvorbis before
// libsndfile opens the file. Why: libsndfile (Debian 1.2.0) leaks the
// `vorbis_info` it set up (5784 bytes) when a crafted Ogg/Vorbis stream's
// headers fail to parse (libsndfile#922, xiph/vorbis#125), so a client that
// keeps sending such files would grow the server without bound. Here the
// same libvorbis calls run on the same packets (identification, comment and
// setup header, then the synthesis set-up libsndfile does next) and every
// structure is cleared on every path; a file that fails is refused before
// libsndfile allocates anything for it.
#ifndef DIARIZATION_ENGINE_AUDIO_OGG_VORBIS_HEADERS_H_
#define DIARIZATION_ENGINE_AUDIO_OGG_VORBIS_HEADERS_H_

#include <cstddef>
#include <span>

#include "absl/status/status.h"

namespace diarization::audio {

// `bytes`: a whole file that starts with an Ogg page. OK when its first
// logical stream is not Vorbis (libsndfile judges it) or when its Vorbis
// headers parse and set up a decoder; INVALID_ARGUMENT, saying what is
// wrong, otherwise.
absl::Status CheckOggVorbisHeaders(std::span<const std::byte> bytes);

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_OGG_VORBIS_HEADERS_H_
