// What the engine's libraries have to say to an operator outside any
// request: a kernel or engine choice at load, a failed provisional
// clustering, an arena that spilled or could not release memory.
//
// Libraries below the server never write to stderr themselves: the server's
// log is one JSON object per line (docs/operations.md), and a plain line in
// it breaks every log pipeline that parses it. They call ReportDiagnostic;
// the process decides where it goes. The server installs a sink that writes
// a JSON event line; without a sink (tools, benchmarks, tests) a diagnostic
// is one plain "source: message" line on stderr, as before.
//
// Hand-written because Debian 12's Abseil (20220623) has no absl/log, and a
// logging library (glog) would be a new dependency for one callback.
#ifndef DIARIZATION_ENGINE_COMMON_DIAGNOSTICS_H_
#define DIARIZATION_ENGINE_COMMON_DIAGNOSTICS_H_

#include <functional>
#include <string_view>

namespace diarization {

// `source` names the part that speaks ("cuda:0 segmentation", "engine",
// "arena"); `message` is one line without a trailing newline.
using DiagnosticSink =
    std::function<void(std::string_view source, std::string_view message)>;

// Replaces the process's sink (an empty one restores the stderr default).
// Call it at start-up, before the engine's threads run; thread-safe.
void SetDiagnosticSink(DiagnosticSink sink);

// Sends one diagnostic to the sink. Thread-safe; the sink runs on the
// caller's thread and must not call back into the caller.
void ReportDiagnostic(std::string_view source, std::string_view message);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_DIAGNOSTICS_H_
