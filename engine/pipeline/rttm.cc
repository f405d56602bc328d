#include "engine/pipeline/rttm.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/text_fields.h"

namespace diarization {
namespace {

// RTTM columns (NIST RTTM v1.3): type, file, channel, onset, duration,
// ortho, subtype, name, confidence, lookahead.
constexpr int kTypeField = 0;
constexpr int kUriField = 1;
constexpr int kOnsetField = 3;
constexpr int kDurationField = 4;
constexpr int kNameField = 7;
constexpr int kMinFields = kNameField + 1;

// Times: ParseNonNegativeNumber uses strtod (not absl::SimpleAtod) because
// pyannote reads RTTM through pandas, which rounds decimals correctly, and so
// does glibc's strtod.
absl::StatusOr<double> ParseTime(std::string_view field, std::string_view what,
                                 int line_number) {
  return ParseNonNegativeNumber(field, "RTTM", what, line_number);
}

}  // namespace

std::string FormatRttm(const std::vector<Segment>& segments,
                       std::string_view uri, int decimals) {
  std::string out;
  for (const Segment& segment : segments) {
    std::string_view file = uri.empty() ? segment.uri : uri;
    // pyannote writes "<NA>" for an annotation without uri.
    if (file.empty()) file = "<NA>";
    absl::StrAppendFormat(&out,
                          "SPEAKER %s 1 %.*f %.*f <NA> <NA> %s <NA> <NA>\n",
                          file, decimals, segment.start_s, decimals,
                          segment.end_s - segment.start_s, segment.speaker);
  }
  return out;
}

absl::StatusOr<std::vector<Segment>> ParseRttm(std::string_view text) {
  std::vector<Segment> segments;
  int line_number = 0;
  size_t line_begin = 0;
  while (line_begin < text.size()) {
    size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line =
        text.substr(line_begin, line_end - line_begin);
    line_begin = line_end + 1;
    ++line_number;
    const std::vector<std::string_view> fields = SplitWhitespaceFields(line);
    if (fields.empty()) continue;
    if (fields[0].starts_with(";;") || fields[0].starts_with("#")) continue;
    if (fields[kTypeField] != "SPEAKER") continue;
    if (fields.size() < kMinFields) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RTTM line ", line_number, ": expected at least ", kMinFields,
          " fields (SPEAKER uri channel onset duration ortho stype name), got ",
          fields.size()));
    }
    Segment segment;
    segment.uri = std::string(fields[kUriField]);
    absl::StatusOr<double> onset =
        ParseTime(fields[kOnsetField], "onset", line_number);
    if (!onset.ok()) return onset.status();
    absl::StatusOr<double> duration =
        ParseTime(fields[kDurationField], "duration", line_number);
    if (!duration.ok()) return duration.status();
    segment.start_s = *onset;
    // end = onset + duration, as pyannote.database's load_rttm computes it.
    segment.end_s = *onset + *duration;
    segment.speaker = std::string(fields[kNameField]);
    segments.push_back(std::move(segment));
  }
  return segments;
}

absl::StatusOr<std::vector<Segment>> ReadRttmFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot open RTTM file '", path, "'"));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) {
    return absl::DataLossError(
        absl::StrCat("error while reading RTTM file '", path, "'"));
  }
  absl::StatusOr<std::vector<Segment>> segments = ParseRttm(contents.str());
  if (!segments.ok()) {
    return absl::Status(segments.status().code(),
                        absl::StrCat(path, ": ", segments.status().message()));
  }
  return segments;
}

}  // namespace diarization
