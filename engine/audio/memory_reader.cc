#include "engine/audio/memory_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace diarization::audio {

int64_t MemoryReader::Read(void* destination, int64_t count) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (count <= 0 || position >= size) return 0;
  const int64_t n = std::min(count, size - position);
  std::memcpy(destination, bytes.data() + position, static_cast<size_t>(n));
  position += n;
  return n;
}

int64_t MemoryReader::Seek(int64_t offset, int whence) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  int64_t base = 0;
  switch (whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = position;
      break;
    case SEEK_END:
      base = size;
      break;
    default:
      return -1;
  }
  if ((offset > 0 && base > size - offset) || base + offset < 0) return -1;
  position = base + offset;
  return position;
}

}  // namespace diarization::audio
