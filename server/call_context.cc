#include "server/call_context.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "engine/runtime/engine.h"
#include "server/transport_events.h"

namespace diarization::server {

absl::Time ClientDeadline(const grpc::CallbackServerContext* context) {
  const std::chrono::system_clock::time_point d = context->deadline();
  if (d == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

absl::Status ClientGoneStatus(const grpc::CallbackServerContext* context) {
  // The server's copy of the deadline is the client's timeout counted from
  // when the call arrived, so it is later than the client's own by the
  // transit time: a client whose deadline passed resets the stream a little
  // before the server's deadline timer fires.
  constexpr absl::Duration kTransitSlack = absl::Milliseconds(250);
  if (absl::Now() + kTransitSlack >= ClientDeadline(context)) {
    return absl::DeadlineExceededError(
        "the client's deadline passed before the result was ready");
  }
  return absl::CancelledError("the client cancelled the call");
}

bool ClientGone(grpc::CallbackServerContext* context) {
  return context->IsCancelled() || absl::Now() >= ClientDeadline(context);
}

std::string PeerKey(const grpc::CallbackServerContext* context) {
  const std::string peer = context->peer();
  // "ipv4:1.2.3.4:5678", "ipv6:[::1]:5678": drop the last ":port".
  const size_t colon = peer.rfind(':');
  const size_t scheme = peer.find(':');
  if (colon == std::string::npos || colon == scheme) return peer;
  return peer.substr(0, colon);
}

void RecordCall(ServiceState& state, RequestLogEntry entry) {
  if (state.metrics() != nullptr) {
    state.metrics()->RecordRequest(entry.method,
                                   static_cast<absl::StatusCode>(entry.code));
  }
  // Lines an attacker can make cheaply (refusals, errors, GetInfo) are rate
  // limited per status code (issue 39: a reset flood wrote 223,000 lines);
  // a call that returned a result is always logged. The next line written
  // says how many were left out (and /metrics counts them).
  const bool has_result =
      entry.code == grpc::StatusCode::OK && entry.method != "GetInfo";
  if (!has_result) {
    LogRateLimit& limit = LogRateLimit::Get();
    const int kind = static_cast<int>(entry.code);
    if (!limit.Allow(kind)) return;
    if (const uint64_t n = limit.TakeSuppressed(kind); n > 0) {
      entry.extra.emplace_back("suppressed_before", static_cast<double>(n));
    }
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
