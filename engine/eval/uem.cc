#include "engine/eval/uem.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/text_fields.h"

namespace diarization::eval {

absl::StatusOr<Uem> ParseUem(std::string_view text) {
  Uem uem;
  int line_number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::vector<std::string_view> fields =
        SplitWhitespaceFields(text.substr(begin, end - begin));
    begin = end + 1;
    ++line_number;
    if (fields.empty() || fields[0].starts_with(";;") ||
        fields[0].starts_with("#")) {
      continue;
    }
    if (fields.size() < 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "UEM line ", line_number,
          ": expected 4 fields (uri channel start end), got ", fields.size()));
    }
    absl::StatusOr<double> start =
        ParseNonNegativeNumber(fields[2], "UEM", "start", line_number);
    if (!start.ok()) return start.status();
    absl::StatusOr<double> stop =
        ParseNonNegativeNumber(fields[3], "UEM", "end", line_number);
    if (!stop.ok()) return stop.status();
    if (*stop < *start) {
      return absl::InvalidArgumentError(absl::StrCat(
          "UEM line ", line_number, ": end ", std::string(fields[3]),
          " is before start ", std::string(fields[2])));
    }
    uem[std::string(fields[0])].push_back({*start, *stop});
  }
  return uem;
}

absl::StatusOr<Uem> ReadUemFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot open UEM file '", path, "'"));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  absl::StatusOr<Uem> uem = ParseUem(contents.str());
  if (!uem.ok()) {
    return absl::Status(uem.status().code(),
                        absl::StrCat(path, ": ", uem.status().message()));
  }
  return uem;
}

}  // namespace diarization::eval
