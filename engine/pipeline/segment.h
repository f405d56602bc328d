// One speaker turn, the pipeline's output unit. Its text form (RTTM) is in
// rttm.h; code that only needs the struct includes this header.
#ifndef DIARIZATION_ENGINE_PIPELINE_SEGMENT_H_
#define DIARIZATION_ENGINE_PIPELINE_SEGMENT_H_

#include <string>

namespace diarization {

// One speaker turn: [start_s, end_s) in seconds, and a speaker label.
struct Segment {
  double start_s = 0.0;
  double end_s = 0.0;
  std::string speaker;
  // File id the segment belongs to (the RTTM "uri" column).
  std::string uri;

  friend bool operator==(const Segment&, const Segment&) = default;
};

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_PIPELINE_SEGMENT_H_
