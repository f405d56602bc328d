// libsndfile's virtual I/O over bytes held in memory, read-only (internal to
// engine/audio): the container decoder and the G.711 tables open audio from
// memory through it.
#ifndef DIARIZATION_ENGINE_AUDIO_SNDFILE_MEMORY_H_
#define DIARIZATION_ENGINE_AUDIO_SNDFILE_MEMORY_H_

#include <sndfile.h>

#include <cstddef>
#include <span>

#include "engine/audio/memory_reader.h"

namespace diarization::audio {

// A read-only file in memory (bounded seeks: memory_reader.h).
using MemoryFile = MemoryReader;

// Callbacks for sf_open_virtual with a MemoryFile* as the user data. Seeks
// outside [0, size] fail, whatever offset a hostile header asks for; writes
// write nothing.
SF_VIRTUAL_IO MemoryFileIo();

struct SndfileCloser {
  void operator()(SNDFILE* file) const { sf_close(file); }
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_SNDFILE_MEMORY_H_
