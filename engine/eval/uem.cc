#include "engine/eval/uem.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace diarization::eval {
namespace {

std::vector<std::string> SplitFields(std::string_view line) {
  std::vector<std::string> fields;
  size_t i = 0;
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  };
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i) fields.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return fields;
}

absl::StatusOr<double> ParseTime(const std::string& text, const char* what,
                                 int line_number) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE ||
      !std::isfinite(value) || value < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("UEM line ", line_number, ": ", what, " '", text,
                     "' is not a finite non-negative number"));
  }
  return value;
}

}  // namespace

absl::StatusOr<Uem> ParseUem(std::string_view text) {
  Uem uem;
  int line_number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::vector<std::string> fields =
        SplitFields(text.substr(begin, end - begin));
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
    absl::StatusOr<double> start = ParseTime(fields[2], "start", line_number);
    if (!start.ok()) return start.status();
    absl::StatusOr<double> stop = ParseTime(fields[3], "end", line_number);
    if (!stop.ok()) return stop.status();
    if (*stop < *start) {
      return absl::InvalidArgumentError(
          absl::StrCat("UEM line ", line_number, ": end ", fields[3],
                       " is before start ", fields[2]));
    }
    uem[fields[0]].push_back({*start, *stop});
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
