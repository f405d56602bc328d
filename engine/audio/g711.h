// G.711 μ-law and A-law code bytes to float samples (internal to
// engine/audio), for raw MULAW/ALAW audio.
#ifndef DIARIZATION_ENGINE_AUDIO_G711_H_
#define DIARIZATION_ENGINE_AUDIO_G711_H_

#include <array>

#include "engine/audio/audio.h"

namespace diarization::audio {

// The sample value of each of the 256 code bytes of `encoding` (kMulaw or
// kAlaw): libsndfile's own decode of that byte, int16 / 32768. So raw
// MULAW/ALAW and a WAV file holding the same bytes decode to identical
// samples. Built once, on first use; thread-safe.
const std::array<float, 256>& G711Table(PcmEncoding encoding);

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_G711_H_
