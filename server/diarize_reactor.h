// The bidirectional Diarize stream: one reactor per call.
//
// One read and at most one write in flight. Each message read is handed to
// the server's work pool (validate the config and start the engine job; or
// decode and resample a chunk and append it to the job); the next read starts
// when that task is done, so a slow engine slows the client down through
// gRPC flow control instead of buffering. Nothing blocks or computes in a
// gRPC callback. The engine's on_partial / on_complete callbacks queue
// responses; a finished write starts the next one. Partial responses are
// coalesced: only the newest waits while a write is in flight. OnCancel
// cancels the job. After the job is accepted, only its completion (exactly
// once, engine/runtime/engine.h) finishes the call.
#ifndef DIARIZATION_SERVER_DIARIZE_REACTOR_H_
#define DIARIZATION_SERVER_DIARIZE_REACTOR_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "engine/runtime/engine.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/request_validation.h"
#include "server/service_state.h"

namespace diarization::server {

class DiarizeReactor
    : public grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse> {
 public:
  static grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
  Start(ServiceState& state, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  DiarizeReactor(ServiceState& state, grpc::CallbackServerContext* context);
  ~DiarizeReactor() override = default;

  void Begin();
  // Pool tasks, one at a time (the next read starts after each).
  void HandleMessage();
  void HandleConfig();
  void HandleAudio();
  void HandleEndOfAudio();
  // Starts the next read unless the call is finishing.
  void ReadNext();

  void OnPartial(runtime::PartialResult partial);
  void OnJobComplete(absl::StatusOr<runtime::JobResult> result);

  // Ends the call with `status`: at once when no job exists; otherwise the
  // job is cancelled and its completion reports `status`.
  void Fail(absl::Status status);
  // Records the end of the call (log line, metrics) and queues the final
  // status. Caller holds mu_.
  void EndLocked(absl::Status status, const v1::DiarizeResult* result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the next write or the finish, if none is in flight.
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The status to report for a job that completed with `status`.
  absl::Status Explain(absl::Status status);

  void AddRef();
  void Release();

  ServiceState& state_;
  grpc::CallbackServerContext* const context_;
  const absl::Time start_time_;
  // The earlier of the client's deadline and max_stream_duration_s.
  const absl::Time client_deadline_;
  const absl::Time stream_deadline_;
  CallSlot slot_;

  // Only touched by the read side (OnReadDone and the pool task it posts,
  // which never overlap).
  v1::DiarizeRequest request_;
  bool have_config_ = false;
  std::unique_ptr<audio::StreamDecoder> decoder_;
  std::vector<float> samples_;
  // Set once by HandleConfig before the job exists; read-only afterwards.
  ValidatedConfig config_;

  absl::Mutex mu_;
  int refs_ ABSL_GUARDED_BY(mu_) = 1;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // A final status has been decided (logged); no more partial writes.
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  // Finish or WriteAndFinish has been called.
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  v1::DiarizeResponse writing_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::DiarizeResponse> pending_partial_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::DiarizeResponse> pending_final_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> pending_status_ ABSL_GUARDED_BY(mu_);
  absl::Status feed_error_ ABSL_GUARDED_BY(mu_);
  // The client's request_id as sent (logged even when the config fails).
  std::string log_request_id_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<runtime::Job> job_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_DIARIZE_REACTOR_H_
