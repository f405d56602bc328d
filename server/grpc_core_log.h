// gRPC core's own log lines (gpr_log: "Failed accept4: Too many open
// files", handshake failures, ...) go to stderr as plain text by default,
// which broke the server's all-JSON log (issue 39). This routes them
// through LogEvent as {"event":"grpc",...} lines, rate limited like the
// per-call lines (a flood repeats the same line; the next one written says
// how many were left out).
#ifndef DIARIZATION_SERVER_GRPC_CORE_LOG_H_
#define DIARIZATION_SERVER_GRPC_CORE_LOG_H_

namespace diarization::server {

// Call before gRPC is used.
void RouteGrpcCoreLogToJson();

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_GRPC_CORE_LOG_H_
