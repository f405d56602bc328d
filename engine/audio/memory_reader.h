// A read-only cursor over bytes held in memory, with POSIX read/lseek
// semantics and bounded seeks (internal to engine/audio): the virtual I/O
// that libsndfile (sndfile_memory.h) and libmpg123 (mp3_decoder.cc) read
// hostile files through.
#ifndef DIARIZATION_ENGINE_AUDIO_MEMORY_READER_H_
#define DIARIZATION_ENGINE_AUDIO_MEMORY_READER_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace diarization::audio {

struct MemoryReader {
  std::span<const std::byte> bytes;
  int64_t position = 0;  // the read offset

  // Copies up to `count` bytes from the position on; returns how many (0 at
  // the end or for count <= 0).
  int64_t Read(void* destination, int64_t count);
  // lseek: moves to `offset` from the start (SEEK_SET), the position
  // (SEEK_CUR) or the end (SEEK_END) and returns the new position; -1, not
  // moving, for another `whence` or a position outside [0, size], whatever
  // offset a hostile header asks for (overflow included).
  int64_t Seek(int64_t offset, int whence);
};

}  // namespace diarization::audio

#endif  // DIARIZATION_ENGINE_AUDIO_MEMORY_READER_H_
