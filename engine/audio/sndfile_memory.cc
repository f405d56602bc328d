#include "engine/audio/sndfile_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace diarization::audio {
namespace {

sf_count_t MemoryLength(void* user) {
  return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size());
}

sf_count_t MemorySeek(sf_count_t offset, int whence, void* user) {
  return static_cast<MemoryFile*>(user)->Seek(offset, whence);
}

sf_count_t MemoryRead(void* destination, sf_count_t count, void* user) {
  return static_cast<MemoryFile*>(user)->Read(destination, count);
}

sf_count_t MemoryWrite(const void*, sf_count_t, void*) { return 0; }

sf_count_t MemoryTell(void* user) {
  return static_cast<MemoryFile*>(user)->position;
}

}  // namespace

SF_VIRTUAL_IO MemoryFileIo() {
  return {MemoryLength, MemorySeek, MemoryRead, MemoryWrite, MemoryTell};
}

}  // namespace diarization::audio
