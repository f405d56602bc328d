#include "engine/common/diagnostics.h"

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"

namespace diarization {
namespace {

absl::Mutex sink_mu(absl::kConstInit);
// Shared so that a Report running while the sink is replaced keeps the old
// one alive until it returns.
std::shared_ptr<const DiagnosticSink>& Sink() {
  static auto* sink = new std::shared_ptr<const DiagnosticSink>();
  return *sink;
}

}  // namespace

void SetDiagnosticSink(DiagnosticSink sink) {
  auto next =
      sink ? std::make_shared<const DiagnosticSink>(std::move(sink)) : nullptr;
  absl::MutexLock lock(&sink_mu);
  Sink() = std::move(next);
}

void ReportDiagnostic(std::string_view source, std::string_view message) {
  std::shared_ptr<const DiagnosticSink> sink;
  {
    absl::MutexLock lock(&sink_mu);
    sink = Sink();
  }
  if (sink != nullptr) {
    (*sink)(source, message);
    return;
  }
  // One write per line, so concurrent diagnostics do not interleave.
  std::string line;
  line.reserve(source.size() + message.size() + 3);
  line.append(source).append(": ").append(message).append("\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace diarization
