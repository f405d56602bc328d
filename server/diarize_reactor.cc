#include "server/diarize_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/common/shapes.h"
#include "server/call_context.h"
#include "server/identification.h"
#include "server/refused_stream.h"
#include "server/reset_flood_guard.h"
#include "server/result_convert.h"
#include "server/status_util.h"
#include "server/transport_events.h"

namespace diarization::server {

grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
DiarizeReactor::Start(ServiceState& state,
                      grpc::CallbackServerContext* context) {
  // Admission first: a refused call (most of a reset flood's) gets a
  // reactor that does no pool work at all (refused_stream.h).
  absl::StatusOr<CallSlot> slot = state.AdmitCall(context);
  if (!slot.ok()) {
    return RefusedStream::Start(state, context, std::move(slot).status());
  }
  auto* reactor = new DiarizeReactor(state, context, *std::move(slot));
  reactor->Begin();
  return reactor;
}

DiarizeReactor::DiarizeReactor(ServiceState& state,
                               grpc::CallbackServerContext* context,
                               CallSlot slot)
    : state_(state),
      context_(context),
      start_time_(absl::Now()),
      client_deadline_(ClientDeadline(context)),
      stream_deadline_(start_time_ +
                       absl::Seconds(state.limits().max_stream_duration_s)),
      slot_(std::move(slot)),
      session_(state.limits(), &sink_) {}

void DiarizeReactor::Begin() {
  if (CallTimer* timer = state_.timer(); timer != nullptr) {
    // The config deadline, or the stream's whole life if that is shorter;
    // later the job carries the stream deadline.
    const absl::Time when =
        std::min(start_time_ + absl::Seconds(state_.limits().config_timeout_s),
                 stream_deadline_);
    AddRef();
    // The callback may run before Schedule returns its id: it clears the
    // id itself only if it is still this one.
    const CallTimer::Id id = timer->Schedule(when, [this] {
      config_timer_ = 0;
      OnConfigDeadline();
      Release();
    });
    CallTimer::Id none = 0;
    config_timer_.compare_exchange_strong(none, id);
  }
  StartRead(&request_);
}

void DiarizeReactor::OnConfigDeadline() {
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || config_received_) return;
  }
  const bool stream_limit = absl::Now() >= stream_deadline_;
  Fail(absl::DeadlineExceededError(
      stream_limit ? absl::StrCat("the stream was open longer than "
                                  "max_stream_duration_s (",
                                  state_.limits().max_stream_duration_s, " s)")
                   : absl::StrCat("no config within config_timeout_s (",
                                  state_.limits().config_timeout_s,
                                  " s) of the stream's start; send the "
                                  "DiarizeRequest with config first")));
}

void DiarizeReactor::ReadNext() {
  absl::MutexLock lock(&mu_);
  if (ended_ || finishing_) return;
  StartRead(&request_);
}

void DiarizeReactor::OnReadDone(bool ok) {
  // Whatever happens next happens on the pool: this is a gRPC thread.
  AddRef();
  if (ok) {
    state_.pool()->Post([this] {
      HandleMessage();
      Release();
    });
  } else {
    state_.pool()->Post([this] {
      HandleEndOfAudio();
      Release();
    });
  }
}

runtime::Job* DiarizeReactor::job() {
  absl::MutexLock lock(&mu_);
  return job_.get();
}

void DiarizeReactor::HandleMessage() {
  bool has_job, cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    has_job = job_ != nullptr;
    cancelled = cancelled_;
  }
  // Before its job exists, a call the client has left (a reset stream's
  // config, under a flood) ends here: no job is started for it.
  if (!has_job && (cancelled || ClientGone(context_))) {
    return Fail(ClientGoneStatus(context_));
  }
  const absl::Status s = session_.OnMessage(request_);
  // A large chunk's bytes are not kept until the next read.
  request_.Clear();
  if (!s.ok()) return Fail(s);
  ContinueReading();
}

void DiarizeReactor::ContinueReading() {
  runtime::Job* j = job();
  const double high_water = state_.limits().stream_backlog_high_water_s;
  if (j == nullptr || j->backlog_audio_s() <= high_water) return ReadNext();
  // Hold the read: gRPC stops the client's writes once its flow-control
  // window fills. The resume runs once, on an engine thread, when the
  // backlog is down to the low-water mark or the job has completed.
  AddRef();
  j->NotifyWhenBacklogAtMost(ResumeBacklogS(state_.limits()), [this] {
    ReadNext();
    Release();
  });
}

absl::Status DiarizeReactor::StartJob(const ValidatedConfig& config) {
  if (state_.state() == ServingState::kDraining) {
    return absl::UnavailableError(
        "the server is draining (shutting down); retry on another replica");
  }
  std::shared_ptr<runtime::Engine> engine = state_.engine();
  if (engine == nullptr) {
    return absl::UnavailableError("the engine is not running");
  }
  absl::StatusOr<Identification> identification = ValidateIdentification(
      request_.config(), EmbeddingModelSha256(state_), kEmbeddingDim);
  if (!identification.ok()) return identification.status();
  {
    absl::MutexLock lock(&mu_);
    config_ = config;
    config_received_ = true;
    if (!identification->known.empty() || config.stable_labels) {
      labeler_.emplace(std::move(identification->known),
                       identification->threshold, config.stable_labels);
    }
  }
  runtime::JobCallbacks callbacks;
  callbacks.on_complete = [this](absl::StatusOr<runtime::JobResult> r) {
    OnJobComplete(std::move(r));
  };
  if (config.partial_results) {
    callbacks.on_partial = [this](runtime::PartialResult p) {
      OnPartial(std::move(p));
    };
  }
  runtime::JobOptions options =
      ToJobOptions(config, std::min(client_deadline_, stream_deadline_));
  options.peer = PeerKey(context_);
  if (const auto& who = slot_.principal()) {
    options.principal = who->name;
    options.principal_backlog_share = who->limits.max_backlog_share;
  }
  // The job's completion holds a reference until it has run: it may come
  // after the call has ended (a timer ended it while the job started).
  AddRef();
  absl::StatusOr<std::unique_ptr<runtime::Job>> job =
      engine->StartJob(options, std::move(callbacks));
  if (!job.ok()) {
    Release();
    return job.status();
  }
  slot_.MarkBusy();
  runtime::Job* handle = job->get();
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    job_ = *std::move(job);
    // The client left, or a timer ended the call, while the job started.
    cancel = cancelled_ || ended_;
  }
  if (cancel) handle->Cancel();
  return absl::OkStatus();
}

absl::Status DiarizeReactor::JobSink::Append(std::span<const float> samples,
                                             const CropEdges& crop_edges) {
  return reactor_->job()->Append(samples, crop_edges);
}

absl::Status DiarizeReactor::JobSink::AppendOwned(std::vector<float>&& samples,
                                                  const CropEdges& crop_edges) {
  return reactor_->job()->AppendOwned(std::move(samples), crop_edges);
}

absl::Status DiarizeReactor::JobSink::Finish() {
  return reactor_->job()->Finish();
}

void DiarizeReactor::HandleEndOfAudio() {
  bool cancelled;
  runtime::Job* job;
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    cancelled = cancelled_;
    job = job_.get();
  }
  // The read also fails when the client leaves, possibly before OnCancel
  // tells us (a 1 ms deadline): that is not a half-close.
  if (cancelled || ClientGone(context_)) {
    // With a job, OnCancel cancels it and its completion ends the call.
    if (job == nullptr) Fail(ClientGoneStatus(context_));
    return;
  }
  const absl::Status s = session_.OnEndOfInput();
  if (!s.ok()) return Fail(s);
}

void DiarizeReactor::Fail(absl::Status status) {
  runtime::Job* job = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    job = job_.get();
    if (job == nullptr) {
      EndLocked(std::move(status), nullptr);
      return;
    }
    if (feed_error_.ok()) feed_error_ = std::move(status);
  }
  job->Cancel();
}

absl::Status DiarizeReactor::Explain(absl::Status status) {
  bool cancelled;
  {
    absl::MutexLock lock(&mu_);
    // A feed error that cancelled the job is the reason. It is not the last
    // word: an append that raced the client's departure fails with the job's
    // own "cancelled" answer, and the client's deadline or cancel below is
    // then what happened (and what the client saw).
    if (status.code() == absl::StatusCode::kCancelled && !feed_error_.ok()) {
      status = feed_error_;
    }
    cancelled = cancelled_;
  }
  const absl::Time now = absl::Now();
  if ((status.code() == absl::StatusCode::kCancelled ||
       status.code() == absl::StatusCode::kDeadlineExceeded) &&
      now >= std::min(client_deadline_, stream_deadline_)) {
    if (stream_deadline_ < client_deadline_) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the stream was open longer than max_stream_duration_s (",
          state_.limits().max_stream_duration_s, " s)"));
    }
    return absl::DeadlineExceededError(
        "the client's deadline passed before the result was ready");
  }
  if (status.code() == absl::StatusCode::kCancelled && cancelled) {
    return ClientGoneStatus(context_);
  }
  return status;
}

void DiarizeReactor::OnPartial(runtime::PartialResult partial) {
  v1::DiarizeResponse response;
  absl::MutexLock lock(&mu_);
  if (ended_ || !config_.has_value()) return;
  FillPartial(partial, *config_, response.mutable_partial(),
              labeler_.has_value() ? &*labeler_ : nullptr);
  pending_partial_ = std::move(response);  // newest replaces an unsent one
  PumpLocked();
}

void DiarizeReactor::OnJobComplete(absl::StatusOr<runtime::JobResult> result) {
  const absl::Status status = Explain(result.status());
  {
    absl::MutexLock lock(&mu_);
    if (!ended_) {
      if (status.ok() && config_.has_value()) {
        v1::DiarizeResponse final_response;
        FillResult(*result, *config_, final_response.mutable_final(),
                   labeler_.has_value() ? &*labeler_ : nullptr);
        pending_final_ = std::move(final_response);
      }
      if (status.ok()) {
        EndLocked(status, &pending_final_->final(), &result->tail);
      } else {
        EndLocked(status, nullptr);
      }
    }
  }
  Release();  // the job's reference (StartJob), after mu_ is released
}

void DiarizeReactor::EndLocked(absl::Status status,
                               const v1::DiarizeResult* result,
                               const runtime::TailTimes* tail) {
  ended_ = true;
  pending_partial_.reset();
  RequestLogEntry entry;
  entry.request_id =
      config_.has_value() ? config_->request_id : session_.sent_request_id();
  entry.method = "Diarize";
  const grpc::Status g = ToGrpcStatus(status);
  entry.code = g.error_code();
  entry.message = g.error_message();
  if (result != nullptr) {
    entry.audio_s = result->audio_s();
    entry.processing_s = result->processing_s();
    entry.rtfx = result->rtfx();
    entry.device = result->device();
  }
  if (tail != nullptr) entry.extra = TailLogFields(*tail);
  entry.peer = context_->peer();
  entry.wall_s = absl::ToDoubleSeconds(absl::Now() - start_time_);
  if (write_in_flight_) {
    // Whether the client takes what is ahead of the final is not known yet.
    deferred_log_ = std::move(entry);
  } else {
    RecordCall(state_, std::move(entry));
  }
  AddRetryHint(status, context_);
  if (!status.ok()) pending_status_ = g;
  PumpLocked();
}

void DiarizeReactor::PumpLocked() {
  if (write_in_flight_ || finishing_) return;
  if (pending_final_.has_value()) {
    writing_ = *std::move(pending_final_);
    pending_final_.reset();
    finishing_ = true;
    slot_.ReleaseAdmission();
    response_deadline_.WriteStarted(stream_deadline_);
    StartWriteAndFinish(&writing_, grpc::WriteOptions(), grpc::Status::OK);
    return;
  }
  if (pending_status_.has_value()) {
    finishing_ = true;
    slot_.ReleaseAdmission();
    response_deadline_.WriteStarted(stream_deadline_);
    Finish(*pending_status_);
    return;
  }
  if (pending_partial_.has_value()) {
    writing_ = *std::move(pending_partial_);
    pending_partial_.reset();
    write_in_flight_ = true;
    response_deadline_.WriteStarted(stream_deadline_);
    StartWrite(&writing_);
  }
}

void DiarizeReactor::OnWriteDone(bool ok) {
  response_deadline_.WriteDone();
  AddRef();
  state_.pool()->Post([this, ok] {
    if (!ok) {
      // The stream broke (client gone); gRPC also reports OnCancel.
      Fail(ClientGoneStatus(context_));
    }
    {
      absl::MutexLock lock(&mu_);
      write_in_flight_ = false;
      if (deferred_log_.has_value()) {
        if (!ok && !response_deadline_.expired()) {
          const grpc::Status gone = ToGrpcStatus(ClientGoneStatus(context_));
          deferred_log_->code = gone.error_code();
          deferred_log_->message = gone.error_message();
        }
        RecordCall(state_, *std::move(deferred_log_));
        deferred_log_.reset();
      }
      PumpLocked();
    }
    Release();
  });
}

void DiarizeReactor::OnCancel() {
  // The slot comes back now, not after the pool gets to this call.
  slot_.ReleaseAdmissionOnCancel();
  OnCallCancelled(context_->peer());
  AddRef();
  state_.pool()->Post([this] {
    runtime::Job* job = nullptr;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      job = job_.get();
    }
    // Without a job, the pending read (which now fails) or the running pool
    // task ends the call.
    if (job != nullptr) job->Cancel();
    Release();
  });
}

void DiarizeReactor::OnResponseUnread() {
  CountTransportEvent(TransportEvent::kUnreadResponse);
  const std::string why =
      absl::StrCat("a response waited unread for write_timeout_s (",
                   state_.limits().write_timeout_s,
                   " s) or past max_stream_duration_s; the call was cancelled");
  absl::MutexLock lock(&mu_);
  if (!ended_) {
    // The cancel that follows ends the job; this is the call's reason.
    if (feed_error_.ok()) feed_error_ = absl::DeadlineExceededError(why);
    return;
  }
  if (deferred_log_.has_value()) {
    // The call's own line: its result was never delivered.
    deferred_log_->code = grpc::StatusCode::DEADLINE_EXCEEDED;
    deferred_log_->message = why;
    RecordCall(state_, *std::move(deferred_log_));
    deferred_log_.reset();
  } else if (LogRateLimit::Get().Allow(LogRateLimit::kEventKind)) {
    LogEvent("response_unread",
             absl::StrCat("Diarize ",
                          config_.has_value() ? config_->request_id
                                              : session_.sent_request_id(),
                          " from ", context_->peer(), ": ", why,
                          " (its status, logged before, was not delivered)"));
  }
}

void DiarizeReactor::OnDone() {
  response_deadline_.CallDone();
  // The config timer, if it has not fired, holds a reference: drop both.
  const CallTimer::Id timer_id = config_timer_.exchange(0);
  if (timer_id != 0 && state_.timer() != nullptr &&
      state_.timer()->Cancel(timer_id)) {
    Release();
  }
  Release();
}

void DiarizeReactor::AddRef() { refs_.fetch_add(1); }

void DiarizeReactor::Release() {
  if (refs_.fetch_sub(1) == 1) state_.pool()->Post([this] { delete this; });
}

}  // namespace diarization::server
