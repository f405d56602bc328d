#include "server/refused_stream.h"

#include <utility>

#include "server/call_context.h"
#include "server/reset_flood_guard.h"
#include "server/status_util.h"

namespace diarization::server {

grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
RefusedStream::Start(ServiceState& state, grpc::CallbackServerContext* context,
                     absl::Status status) {
  return new RefusedStream(state, context, std::move(status));
}

RefusedStream::RefusedStream(ServiceState& state,
                             grpc::CallbackServerContext* context,
                             absl::Status status) {
  const std::string peer = context->peer();
  // Refusals count toward the connection's resets: a flood that keeps
  // every slot taken is refused rather than cancelled.
  OnCallCancelled(peer);
  const grpc::Status g = ToGrpcStatus(status);
  RequestLogEntry entry;
  entry.method = "Diarize";
  entry.code = g.error_code();
  entry.message = g.error_message();
  entry.peer = peer;
  RecordCall(state, std::move(entry));  // rate limited: no result
  AddRetryHint(status, context);
  Finish(g);
}

}  // namespace diarization::server
