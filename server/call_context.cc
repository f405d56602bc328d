#include "server/call_context.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "engine/runtime/engine.h"

namespace diarization::server {

absl::Time ClientDeadline(const grpc::CallbackServerContext* context) {
  const std::chrono::system_clock::time_point d = context->deadline();
  if (d == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

void RecordCall(ServiceState& state, RequestLogEntry entry) {
  if (state.metrics() != nullptr) {
    state.metrics()->RecordRequest(entry.method,
                                   static_cast<absl::StatusCode>(entry.code));
  }
  LogRequest(entry);
}

void AddRetryHint(const absl::Status& status,
                  grpc::CallbackServerContext* context) {
  if (status.code() != absl::StatusCode::kResourceExhausted) return;
  std::optional<double> after = runtime::RetryAfter(status);
  if (!after.has_value()) return;
  context->AddTrailingMetadata("retry-after-s",
                               absl::StrFormat("%.3f", *after));
}

}  // namespace diarization::server
