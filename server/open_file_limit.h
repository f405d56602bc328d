// The process's open-file limit (issue 39, finding 2): every connection is
// a descriptor, and a container's soft limit (often 1,024) is reached by a
// modest flood while the hard limit is far higher. RaiseOpenFileLimit
// lifts the soft limit to the hard one at start (an unprivileged process
// may) and says what it found.
#ifndef DIARIZATION_SERVER_OPEN_FILE_LIMIT_H_
#define DIARIZATION_SERVER_OPEN_FILE_LIMIT_H_

#include <cstdint>
#include <string>

namespace diarization::server {

struct OpenFileLimit {
  uint64_t soft_before = 0;
  uint64_t soft = 0;  // now
  uint64_t hard = 0;
  // A sentence for the log.
  std::string summary;
};

OpenFileLimit RaiseOpenFileLimit();

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_OPEN_FILE_LIMIT_H_
