// The one place where absl::Status becomes grpc::Status. absl's canonical codes
// are google.rpc.Code, the numbers gRPC uses, so the mapping is one to one;
// what this file adds is the policy of which codes the service may return
// (docs/api.md, "Status codes").
#ifndef DIARIZATION_SERVER_STATUS_UTIL_H_
#define DIARIZATION_SERVER_STATUS_UTIL_H_

#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace diarization::server {

// absl → grpc, same code and message. An OK status maps to grpc::Status::OK.
// Codes the API never returns to clients (UNKNOWN, DATA_LOSS, ...) are
// reported as INTERNAL with the original code named in the message, so that a
// bug is visible as a bug.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Marks `status` as an answer the API lists for this request even though
// its code is not among the service-wide ones: FAILED_PRECONDITION for a
// voiceprint that cannot be made or used (docs/api.md). ToGrpcStatus then
// passes its code through; an unmarked FAILED_PRECONDITION (an engine
// misuse) stays INTERNAL.
absl::Status AsApiStatus(absl::Status status);

// The canonical upper-case name of a gRPC code ("INVALID_ARGUMENT"), for logs
// and metric labels.
std::string_view GrpcCodeName(grpc::StatusCode code);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_STATUS_UTIL_H_
