// The bidirectional Diarize stream: one reactor per call.
//
// One read and at most one write in flight. Each message read is handed to
// the server's stream pool, where the StreamSession (stream_session.h)
// sequences it: validate the config and start the engine job, or decode and
// resample a chunk and append it to the job. Nothing blocks or computes in a
// gRPC callback.
//
// Flow control: the next read starts when that task is done, unless the
// job's backlog (audio accepted and not yet through the networks) is above
// ServiceLimits::stream_backlog_high_water_s; then the read is held until
// the engine reports the backlog down to half of it
// (Job::NotifyWhenBacklogAtMost). While no read is pending, gRPC's flow
// control stops the client's writes, so a client that sends faster than the
// devices work is slowed down, never failed or truncated.
//
// Timers, all armed at the call's start: the config must arrive within
// config_timeout_s (else DEADLINE_EXCEEDED), and the whole stream ends at
// max_stream_duration_s or the client's deadline (the job carries the
// earlier of them once it exists).
//
// Admission (ServiceState::AdmitCall) comes before this reactor: a refused
// call gets a RefusedStream instead (refused_stream.h: no pool work at
// all, which matters under a reset flood), so a DiarizeReactor always holds
// an admitted CallSlot from its construction.
//
// The engine's on_partial / on_complete callbacks queue responses; a
// finished write starts the next one. Partial responses are coalesced: only
// the newest waits while a write is in flight. OnCancel gives the call's
// place under max_concurrent_streams back on the spot (on gRPC's thread,
// CallSlot::ReleaseAdmissionOnCancel: thread-safe, no mu_) and cancels the
// job from the pool. A message taken after the client left, before a job
// exists (a reset stream's config), starts no job: the call just ends.
// After the job is accepted, only its completion (exactly once,
// engine/runtime/engine.h) finishes the call. A call that ends because the
// client left is logged with the client's status (CANCELLED or
// DEADLINE_EXCEEDED).
//
// Lifetime: reference counted. gRPC holds one reference until OnDone, each
// pool task, held read (backpressure) and pending timer one; the last
// Release deletes the reactor on the pool. gRPC callbacks only post work to
// the pool (they may run inline inside our gRPC calls, which we make while
// holding mu_).
#ifndef DIARIZATION_SERVER_DIARIZE_REACTOR_H_
#define DIARIZATION_SERVER_DIARIZE_REACTOR_H_

#include <atomic>
#include <memory>
#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/pipeline/speaker_labeler.h"
#include "engine/runtime/engine.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/call_timer.h"
#include "server/request_log.h"
#include "server/request_validation.h"
#include "server/response_deadline.h"
#include "server/service_state.h"
#include "server/stream_session.h"

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
  DiarizeReactor(ServiceState& state, grpc::CallbackServerContext* context,
                 CallSlot slot);
  ~DiarizeReactor() override = default;

  void Begin();
  // Pool tasks, one at a time (the next read starts after each).
  void HandleMessage();
  void HandleEndOfAudio();
  // After a message was taken: the next read now, or once the job's backlog
  // is down (flow control).
  void ContinueReading();
  // Starts the next read unless the call is finishing.
  void ReadNext();
  // The config timer fired.
  void OnConfigDeadline();
  // A response waited unread past write_timeout_s (response_deadline.h);
  // the call is cancelled right after.
  void OnResponseUnread();

  // What session_ asks of the job (through sink_), on the read side.
  class JobSink : public StreamJobSink {
   public:
    explicit JobSink(DiarizeReactor* reactor) : reactor_(reactor) {}
    absl::Status Start(const ValidatedConfig& config) override {
      return reactor_->StartJob(config);
    }
    absl::Status Append(std::span<const float> samples,
                        const CropEdges& crop_edges) override;
    absl::Status AppendOwned(std::vector<float>&& samples,
                             const CropEdges& crop_edges) override;
    absl::Status Finish() override;

   private:
    DiarizeReactor* const reactor_;
  };
  absl::Status StartJob(const ValidatedConfig& config);

  void OnPartial(runtime::PartialResult partial);
  void OnJobComplete(absl::StatusOr<runtime::JobResult> result);

  // Ends the call with `status`: at once when no job exists; otherwise the
  // job is cancelled and its completion reports `status`.
  void Fail(absl::Status status);
  // Records the end of the call (log line, metrics) and queues the final
  // status. Caller holds mu_.
  // `tail`: the job's, for the log line (with a result only).
  void EndLocked(absl::Status status, const v1::DiarizeResult* result,
                 const runtime::TailTimes* tail = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the next write or the finish, if none is in flight.
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The status to report for a job that completed with `status`.
  absl::Status Explain(absl::Status status);
  runtime::Job* job();

  void AddRef();
  void Release();

  ServiceState& state_;
  grpc::CallbackServerContext* const context_;
  const absl::Time start_time_;
  const absl::Time client_deadline_;
  const absl::Time stream_deadline_;
  CallSlot slot_;

  // Only touched by the read side (OnReadDone and the pool task it posts,
  // which never overlap).
  v1::DiarizeRequest request_;
  JobSink sink_{this};
  StreamSession session_;

  // Atomic, and the gRPC callbacks (OnReadDone, OnWriteDone, OnCancel,
  // OnDone) never take mu_ themselves: gRPC may run them inline inside a
  // StartRead/StartWrite/Finish that we call while holding mu_ (a call
  // already cancelled completes its operations at once).
  std::atomic<int> refs_{1};
  std::atomic<CallTimer::Id> config_timer_{0};
  // Ends the call when a response waits unread (issue 39).
  ResponseDeadline response_deadline_{state_, context_, [this] { AddRef(); },
                                      [this] { Release(); },
                                      [this] { OnResponseUnread(); }};

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The config has been taken (the config timer no longer matters).
  bool config_received_ ABSL_GUARDED_BY(mu_) = false;
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
  // The call's log line, held while a partial result's write is in flight
  // when the call ends: written when that write completes, or with
  // DEADLINE_EXCEEDED when it never does (OnResponseUnread).
  std::optional<RequestLogEntry> deferred_log_ ABSL_GUARDED_BY(mu_);
  // The validated config, copied for the engine callbacks (FillResult).
  std::optional<ValidatedConfig> config_ ABSL_GUARDED_BY(mu_);
  // Known speakers and stable labels across the partials and the final
  // (only when the config asks for either).
  std::optional<pipeline::SpeakerLabeler> labeler_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<runtime::Job> job_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_DIARIZE_REACTOR_H_
