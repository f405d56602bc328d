// Evaluation maps (NIST UEM files: "uri channel start end" per line), as
// pyannote.database's load_uem reads them.
#ifndef DIARIZATION_ENGINE_EVAL_UEM_H_
#define DIARIZATION_ENGINE_EVAL_UEM_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/eval/der.h"

namespace diarization::eval {

// Regions to evaluate, by uri, in file order.
using Uem = std::map<std::string, std::vector<Interval>>;

// Parses UEM text. Blank lines and lines starting with ';;' or '#' are
// skipped. Errors name the line: too few fields, a start or end that is not
// a finite non-negative number, an end before the start.
absl::StatusOr<Uem> ParseUem(std::string_view text);

// Reads and parses a UEM file.
absl::StatusOr<Uem> ReadUemFile(const std::string& path);

}  // namespace diarization::eval

#endif  // DIARIZATION_ENGINE_EVAL_UEM_H_
