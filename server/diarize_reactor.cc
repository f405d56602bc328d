#include "server/diarize_reactor.h"

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/call_context.h"
#include "server/result_convert.h"
#include "server/status_util.h"

namespace diarization::server {

grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
DiarizeReactor::Start(ServiceState& state,
                      grpc::CallbackServerContext* context) {
  auto* reactor = new DiarizeReactor(state, context);
  reactor->Begin();
  return reactor;
}

DiarizeReactor::DiarizeReactor(ServiceState& state,
                               grpc::CallbackServerContext* context)
    : state_(state),
      context_(context),
      start_time_(absl::Now()),
      client_deadline_(ClientDeadline(context)),
      stream_deadline_(start_time_ +
                       absl::Seconds(state.limits().max_stream_duration_s)) {}

void DiarizeReactor::Begin() {
  absl::StatusOr<CallSlot> slot = state_.AdmitCall(context_);
  if (!slot.ok()) return Fail(slot.status());
  slot_ = *std::move(slot);
  StartRead(&request_);
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

void DiarizeReactor::HandleMessage() {
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
  }
  switch (request_.request_case()) {
    case v1::DiarizeRequest::kConfig:
      if (have_config_) {
        return Fail(absl::InvalidArgumentError(
            "config was sent twice; only the first DiarizeRequest may carry "
            "config, later ones carry audio"));
      }
      return HandleConfig();
    case v1::DiarizeRequest::kAudio:
      if (!have_config_) {
        return Fail(absl::InvalidArgumentError(
            "the first DiarizeRequest must carry config (encoding, sample "
            "rate, ...); this one carries audio"));
      }
      return HandleAudio();
    default:
      return Fail(absl::InvalidArgumentError(
          have_config_ ? "a DiarizeRequest carries neither config nor audio"
                       : "the first DiarizeRequest must carry config; this "
                         "one carries nothing"));
  }
}

void DiarizeReactor::HandleConfig() {
  {
    // For the log line, should the config be refused.
    absl::MutexLock lock(&mu_);
    log_request_id_ = request_.config().request_id().substr(0, 128);
  }
  absl::StatusOr<ValidatedConfig> config =
      ValidateConfig(request_.config(), RpcKind::kStream, state_.limits());
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<std::unique_ptr<audio::StreamDecoder>> decoder =
      audio::StreamDecoder::Create(ToPcmFormat(*config),
                                   ToDecodeLimits(state_.limits()));
  if (!decoder.ok()) return Fail(decoder.status());
  std::shared_ptr<runtime::Engine> engine = state_.engine();
  if (engine == nullptr) {
    return Fail(absl::UnavailableError("the engine is not running"));
  }
  config_ = *std::move(config);
  decoder_ = *std::move(decoder);
  have_config_ = true;

  runtime::JobCallbacks callbacks;
  callbacks.on_complete = [this](absl::StatusOr<runtime::JobResult> r) {
    OnJobComplete(std::move(r));
  };
  if (config_.partial_results) {
    callbacks.on_partial = [this](runtime::PartialResult p) {
      OnPartial(std::move(p));
    };
  }
  absl::StatusOr<std::unique_ptr<runtime::Job>> job = engine->StartJob(
      ToJobOptions(config_, std::min(client_deadline_, stream_deadline_)),
      std::move(callbacks));
  if (!job.ok()) return Fail(job.status());
  runtime::Job* handle = job->get();
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    job_ = *std::move(job);
    cancelled = cancelled_;
  }
  if (cancelled) return handle->Cancel();
  ReadNext();
}

void DiarizeReactor::HandleAudio() {
  const std::string& bytes = request_.audio();
  samples_.clear();
  absl::Status s = decoder_->Push(
      std::span<const std::byte>(
          reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()),
      samples_);
  if (!s.ok()) return Fail(s);
  if (!samples_.empty()) {
    runtime::Job* job;
    {
      absl::MutexLock lock(&mu_);
      job = job_.get();
    }
    s = job->Append(samples_);
    if (!s.ok()) return Fail(s);
  }
  ReadNext();
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
  if (cancelled) {
    // With a job, OnCancel has cancelled it and its completion ends the call.
    if (job == nullptr) Fail(absl::CancelledError("the client cancelled"));
    return;
  }
  if (!have_config_) {
    return Fail(absl::InvalidArgumentError(
        "the stream ended before its first DiarizeRequest (config)"));
  }
  samples_.clear();
  absl::Status s = decoder_->Finish(samples_);
  if (!s.ok()) return Fail(s);
  if (!samples_.empty()) {
    s = job->Append(samples_);
    if (!s.ok()) return Fail(s);
  }
  s = job->Finish();
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
  if (status.code() == absl::StatusCode::kCancelled) {
    absl::MutexLock lock(&mu_);
    if (!feed_error_.ok()) return feed_error_;
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
  return status;
}

void DiarizeReactor::OnPartial(runtime::PartialResult partial) {
  v1::DiarizeResponse response;
  FillPartial(partial, config_, response.mutable_partial());
  absl::MutexLock lock(&mu_);
  if (ended_) return;
  pending_partial_ = std::move(response);  // newest replaces an unsent one
  PumpLocked();
}

void DiarizeReactor::OnJobComplete(absl::StatusOr<runtime::JobResult> result) {
  const absl::Status status = Explain(result.status());
  v1::DiarizeResponse final_response;
  if (status.ok()) {
    FillResult(*result, config_, final_response.mutable_final());
  }
  absl::MutexLock lock(&mu_);
  if (ended_) return;
  if (status.ok()) pending_final_ = std::move(final_response);
  EndLocked(status, status.ok() ? &pending_final_->final() : nullptr);
}

void DiarizeReactor::EndLocked(absl::Status status,
                               const v1::DiarizeResult* result) {
  ended_ = true;
  pending_partial_.reset();
  RequestLogEntry entry;
  entry.request_id =
      config_.request_id.empty() ? log_request_id_ : config_.request_id;
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
  entry.peer = context_->peer();
  entry.wall_s = absl::ToDoubleSeconds(absl::Now() - start_time_);
  RecordCall(state_, std::move(entry));
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
    StartWriteAndFinish(&writing_, grpc::WriteOptions(), grpc::Status::OK);
    return;
  }
  if (pending_status_.has_value()) {
    finishing_ = true;
    Finish(*pending_status_);
    return;
  }
  if (pending_partial_.has_value()) {
    writing_ = *std::move(pending_partial_);
    pending_partial_.reset();
    write_in_flight_ = true;
    StartWrite(&writing_);
  }
}

void DiarizeReactor::OnWriteDone(bool ok) {
  if (!ok) {
    // The stream broke (client gone); gRPC also reports OnCancel.
    Fail(absl::CancelledError("the client stopped receiving responses"));
  }
  absl::MutexLock lock(&mu_);
  write_in_flight_ = false;
  PumpLocked();
}

void DiarizeReactor::OnCancel() {
  runtime::Job* job = nullptr;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    job = job_.get();
  }
  // Without a job, the pending read (which now fails) or the running pool
  // task ends the call.
  if (job != nullptr) job->Cancel();
}

void DiarizeReactor::OnDone() { Release(); }

void DiarizeReactor::AddRef() {
  absl::MutexLock lock(&mu_);
  ++refs_;
}

void DiarizeReactor::Release() {
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    last = --refs_ == 0;
  }
  if (last) state_.pool()->Post([this] { delete this; });
}

}  // namespace diarization::server
