// Exit codes of diarize-client, for scripts (docs/api.md, "Command-line
// client"):
//   0 success
//   1 any other failure (INTERNAL, UNKNOWN, CANCELLED, ...)
//   2 usage: bad flags, unreadable input file
//   3 the server refused the request: INVALID_ARGUMENT (bad config or audio)
//   4 try again later: UNAVAILABLE (loading, draining, unreachable) or
//     RESOURCE_EXHAUSTED (admission control, too many streams)
//   5 DEADLINE_EXCEEDED
//   6 not allowed: UNAUTHENTICATED (no or a wrong token) or
//     PERMISSION_DENIED (the token may not call this method)
//   7 batch mode (--out_dir): at least one file failed for good (the
//     summary lists them)
#ifndef DIARIZATION_CLIENTS_CLI_EXIT_CODES_H_
#define DIARIZATION_CLIENTS_CLI_EXIT_CODES_H_

#include "grpcpp/support/status.h"

namespace diarization::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitOther = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalidArgument = 3;
inline constexpr int kExitRetryLater = 4;
inline constexpr int kExitDeadline = 5;
inline constexpr int kExitAuth = 6;
inline constexpr int kExitBatchFailed = 7;

inline int ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kExitInvalidArgument;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitRetryLater;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitDeadline;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitAuth;
    default:
      return kExitOther;
  }
}

// The canonical name of a gRPC code, for messages.
inline const char* CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_EXIT_CODES_H_
