// Helpers shared by the reactors: deadlines, peers and the end-of-call record
// (log line + metrics).
#ifndef DIARIZATION_SERVER_CALL_CONTEXT_H_
#define DIARIZATION_SERVER_CALL_CONTEXT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "server/request_log.h"
#include "server/service_state.h"

namespace diarization::server {

// The client's deadline, or InfiniteFuture when it set none.
absl::Time ClientDeadline(const grpc::CallbackServerContext* context);

// The status of a call whose client has gone (OnCancel, a failed read):
// DEADLINE_EXCEEDED when the client's deadline has passed or is less than
// 250 ms away (transit), else CANCELLED.
// What the client itself sees, so it is what the log line records.
absl::Status ClientGoneStatus(const grpc::CallbackServerContext* context);

// True when the client has left: its deadline passed or it cancelled.
bool ClientGone(grpc::CallbackServerContext* context);

// The caller for per-peer limits (runtime::AdmissionRequest::peer): the
// peer address without its port ("ipv4:10.1.2.3"), so the connections of
// one client count together.
std::string PeerKey(const grpc::CallbackServerContext* context);

// Records one finished RPC: the JSON log line and
// diarization_requests_total{method, code}.
void RecordCall(ServiceState& state, RequestLogEntry entry);

// A RESOURCE_EXHAUSTED status from the engine carries a retry hint
// (runtime::RetryAfter); clients get it as trailing metadata
// "retry-after-s" (decimal seconds) and in the message.
void AddRetryHint(const absl::Status& status,
                  grpc::CallbackServerContext* context);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_CALL_CONTEXT_H_
