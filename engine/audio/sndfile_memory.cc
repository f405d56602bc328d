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
  auto* file = static_cast<MemoryFile*>(user);
  const sf_count_t size = static_cast<sf_count_t>(file->bytes.size());
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = file->position;
      break;
    case SEEK_END:
      base = size;
      break;
    default:
      return -1;
  }
  // Refuse positions outside [0, size] (and overflow) instead of trusting
  // offsets read from a possibly hostile header.
  if ((offset > 0 && base > size - offset) || base + offset < 0) return -1;
  file->position = base + offset;
  return file->position;
}

sf_count_t MemoryRead(void* destination, sf_count_t count, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  const sf_count_t size = static_cast<sf_count_t>(file->bytes.size());
  if (count <= 0 || file->position >= size) return 0;
  const sf_count_t n = std::min(count, size - file->position);
  std::memcpy(destination, file->bytes.data() + file->position,
              static_cast<size_t>(n));
  file->position += n;
  return n;
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
