// Line-oriented text formats (RTTM, UEM): whitespace-separated fields and
// time fields, with errors that name the format, line and field.
#ifndef DIARIZATION_ENGINE_COMMON_TEXT_FIELDS_H_
#define DIARIZATION_ENGINE_COMMON_TEXT_FIELDS_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization {

// Splits on spaces, tabs, carriage returns, \v and \f (pandas' sep=r"\s+");
// no empty fields. Hand-split because Debian's Abseil has its own
// absl::string_view, which does not take std::string_view.
std::vector<std::string_view> SplitWhitespaceFields(std::string_view line);

// A finite, non-negative decimal number (seconds). `format` and `what` name
// it in the error: "RTTM line 3: onset 'abc' is not a finite number",
// "UEM line 1: end -2 is negative".
absl::StatusOr<double> ParseNonNegativeNumber(std::string_view field,
                                              std::string_view format,
                                              std::string_view what,
                                              int line_number);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_TEXT_FIELDS_H_
