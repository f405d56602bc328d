#include "engine/common/text_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace diarization {

std::vector<std::string_view> SplitWhitespaceFields(std::string_view line) {
  std::vector<std::string_view> fields;
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  };
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i) fields.push_back(line.substr(i, j - i));
    i = j;
  }
  return fields;
}

absl::StatusOr<double> ParseNonNegativeNumber(std::string_view field,
                                              std::string_view format,
                                              std::string_view what,
                                              int line_number) {
  const std::string text(field);
  const std::string where = absl::StrCat(std::string(format), " line ",
                                         line_number, ": ", std::string(what));
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE ||
      !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " '", text, "' is not a finite number"));
  }
  if (value < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " ", text, " is negative"));
  }
  return value;
}

}  // namespace diarization
