// One structured log line per finished RPC, as JSON on stderr, e.g.
//   {"ts":"2026-11-30T08:00:00.123Z","request_id":"srv-…","method":"Diarize",
//    "code":"OK","audio_s":61.2,"processing_s":0.71,"rtfx":86.2,
//    "device":"cpu","peer":"ipv4:127.0.0.1:53422","message":""}
// Lines are written whole (one write(2) each), so concurrent requests never
// interleave inside a line.
#ifndef DIARIZATION_SERVER_REQUEST_LOG_H_
#define DIARIZATION_SERVER_REQUEST_LOG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpcpp/support/status.h"

namespace diarization::server {

struct RequestLogEntry {
  std::string request_id;
  std::string method;  // "Diarize", "DiarizeFile", "GetInfo"
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;  // the status message when not OK
  double audio_s = 0.0;
  double processing_s = 0.0;
  double rtfx = 0.0;
  std::string device;
  std::string peer;
  // Wall seconds from the call's start to its end.
  double wall_s = 0.0;
  // More numeric fields, written after the others in this order: the
  // tail_* breakdown of a call whose job completed OK (TailLogFields,
  // result_convert.h; docs/operations.md says what each means).
  std::vector<std::pair<std::string, double>> extra;
};

// The JSON line (with trailing newline).
std::string FormatRequestLog(const RequestLogEntry& entry);

// Writes FormatRequestLog(entry) to stderr.
void LogRequest(const RequestLogEntry& entry);

// A free-form server event as one JSON line: {"ts":…,"event":…,"detail":…}.
void LogEvent(std::string_view event, std::string_view detail);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_REQUEST_LOG_H_
