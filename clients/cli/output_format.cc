#include "clients/cli/output_format.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cli/svg_timeline.h"
#include "google/protobuf/util/json_util.h"

namespace diarization::client {

absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "rttm") return OutputFormat::kRttm;
  if (name == "json") return OutputFormat::kJson;
  if (name == "text") return OutputFormat::kText;
  if (name == "svg") return OutputFormat::kSvg;
  return absl::InvalidArgumentError(
      absl::StrCat("--output is '", name, "'; use rttm, json, text or svg"));
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options)
           .ok()) {
    return "{}\n";
  }
  return out;
}

std::string FormatResult(const v1::DiarizeResult& result, OutputFormat format) {
  switch (format) {
    case OutputFormat::kRttm:
      return result.rttm();
    case OutputFormat::kJson:
      return ToJson(result);
    case OutputFormat::kText: {
      std::string out = absl::StrFormat(
          "# %s: %d speaker(s), %.2f s of audio, processed in %.3f s "
          "(RTFx %.1f) on %s\n",
          result.request_id(), result.speaker_count(), result.audio_s(),
          result.processing_s(), result.rtfx(), result.device());
      for (const v1::Segment& s : result.segments()) {
        absl::StrAppendFormat(&out, "%9.3f - %9.3f  %s\n", s.start_s(),
                              s.end_s(), s.speaker());
      }
      return out;
    }
    case OutputFormat::kSvg: {
      std::vector<TimelineSegment> segments;
      for (const v1::Segment& s : result.segments()) {
        segments.push_back({s.start_s(), s.end_s(), s.speaker()});
      }
      return SvgTimeline(
          segments, result.audio_s(),
          absl::StrFormat("%s: %d speaker(s), %.1f s of audio, %s",
                          result.request_id(), result.speaker_count(),
                          result.audio_s(), result.device()));
    }
  }
  return "";
}

std::string FormatPartial(const v1::PartialResult& p) {
  std::set<std::string> speakers;
  for (const v1::Segment& s : p.segments()) speakers.insert(s.speaker());
  return absl::StrFormat(
      "partial%s: received %.1f s, processed %.1f s, %d segments, %d "
      "speakers\n",
      p.provisional() ? " (provisional)" : "", p.audio_received_s(),
      p.audio_processed_s(), p.segments_size(), speakers.size());
}

}  // namespace diarization::client
