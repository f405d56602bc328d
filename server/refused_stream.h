// A Diarize stream refused at admission (ServiceState::AdmitCall): loading,
// draining, no valid token, every slot taken, or a call its client already
// reset (HTTP/2 rapid reset, issue 39 finding 5).
//
// Why not a DiarizeReactor that fails at once: under a reset flood most
// streams end here, and each DiarizeReactor costs a pool task (its delete,
// on the 2-thread work pool, where the legitimate streams' messages wait).
// This reactor holds no lock, no timer, no session and no pool task: it
// records the call (rate-limited log line, metrics, the reset guard's
// count), finishes with the refusal in its constructor and deletes itself
// in OnDone, gRPC's last callback. It never reads a message.
#ifndef DIARIZATION_SERVER_REFUSED_STREAM_H_
#define DIARIZATION_SERVER_REFUSED_STREAM_H_

#include "absl/status/status.h"
#include "diarization/v1/diarization.pb.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/service_state.h"

namespace diarization::server {

class RefusedStream
    : public grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse> {
 public:
  // Returns the reactor for gRPC; the call is finishing with `status`.
  static grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
  Start(ServiceState& state, grpc::CallbackServerContext* context,
        absl::Status status);

  void OnDone() override { delete this; }

 private:
  RefusedStream(ServiceState& state, grpc::CallbackServerContext* context,
                absl::Status status);
  ~RefusedStream() override = default;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_REFUSED_STREAM_H_
