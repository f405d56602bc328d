// The RTTM text form of speaker segments (segment.h): NIST RTTM, as
// pyannote writes it.
//
// Writer: pyannote.core Annotation.write_rttm — one line per segment,
//   SPEAKER {uri} 1 {start:.3f} {duration:.3f} <NA> <NA> {label} <NA> <NA>
// sorted by (start, end, label). Reader: the same lines; blank lines and
// lines starting with ';;' or '#' are skipped; other record types are skipped.
#ifndef DIARIZATION_ENGINE_PIPELINE_RTTM_H_
#define DIARIZATION_ENGINE_PIPELINE_RTTM_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/segment.h"

namespace diarization {

// Formats segments as RTTM lines ("%.{decimals}f" for onset and duration,
// pyannote uses 3). Segments are written in the order given; `uri` overrides
// each segment's own uri when not empty; an empty uri is written "<NA>", as
// pyannote does. RTTM is whitespace-separated: uris and labels must not
// contain whitespace (pyannote refuses them; here the caller must ensure it).
std::string FormatRttm(const std::vector<Segment>& segments,
                       std::string_view uri = "", int decimals = 3);

// Parses RTTM text. Errors name the line number and what is wrong (too few
// fields, a non-numeric or negative onset/duration).
absl::StatusOr<std::vector<Segment>> ParseRttm(std::string_view text);

// Reads and parses an RTTM file.
absl::StatusOr<std::vector<Segment>> ReadRttmFile(const std::string& path);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_PIPELINE_RTTM_H_
