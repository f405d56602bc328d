// How diarize-client prints a result: RTTM (pyannote's text, as the server
// formats it), JSON (the DiarizeResult message in proto3 JSON), a text
// timeline for people, or the timeline as an SVG picture (svg_timeline.h).
#ifndef DIARIZATION_CLIENTS_CLI_OUTPUT_FORMAT_H_
#define DIARIZATION_CLIENTS_CLI_OUTPUT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"

namespace diarization::client {

enum class OutputFormat { kRttm, kJson, kText, kSvg };

absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& name);

std::string FormatResult(const v1::DiarizeResult& result, OutputFormat format);

// One line for a partial result (stderr while streaming).
std::string FormatPartial(const v1::PartialResult& partial);

// A message as indented proto3 JSON with the proto's field names.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_OUTPUT_FORMAT_H_
