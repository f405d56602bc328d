#include "server/diarize_file_reactor.h"

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/audio/audio.h"
#include "server/call_context.h"
#include "server/result_convert.h"
#include "server/status_util.h"

namespace diarization::server {

grpc::ServerUnaryReactor* DiarizeFileReactor::Start(
    ServiceState& state, grpc::CallbackServerContext* context,
    const v1::DiarizeFileRequest* request, v1::DiarizeResult* response) {
  auto* reactor = new DiarizeFileReactor(state, context, request, response);
  reactor->Begin();
  return reactor;
}

DiarizeFileReactor::DiarizeFileReactor(ServiceState& state,
                                       grpc::CallbackServerContext* context,
                                       const v1::DiarizeFileRequest* request,
                                       v1::DiarizeResult* response)
    : state_(state),
      context_(context),
      request_(request),
      response_(response),
      start_time_(absl::Now()) {}

void DiarizeFileReactor::Begin() {
  // Cheap checks only: this runs on a gRPC thread.
  absl::StatusOr<CallSlot> slot = state_.AdmitCall(context_);
  if (!slot.ok()) return FinishCall(slot.status());
  slot_ = *std::move(slot);

  absl::StatusOr<ValidatedConfig> config =
      ValidateConfig(request_->config(), RpcKind::kUnary, state_.limits());
  if (!config.ok()) return FinishCall(config.status());
  config_ = *std::move(config);
  if (request_->audio().empty()) {
    return FinishCall(absl::InvalidArgumentError(
        "audio is empty; DiarizeFile needs the bytes of a WAV/FLAC/OGG file "
        "or raw PCM described by config.audio"));
  }
  AddRef();
  state_.pool()->Post([this] {
    DecodeAndSubmit();
    Release();
  });
}

void DiarizeFileReactor::DecodeAndSubmit() {
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    cancelled = cancelled_;
  }
  // OnCancel found no job to cancel; finish here.
  if (cancelled) {
    return FinishCall(absl::CancelledError("the client cancelled the call"));
  }
  const std::string& bytes = request_->audio();
  const std::span<const std::byte> data(
      reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  const audio::DecodeLimits limits = ToDecodeLimits(state_.limits());
  const absl::Time decode_start = absl::Now();
  absl::StatusOr<audio::Waveform> wave =
      config_.encoding == v1::ENCODED
          ? audio::DecodeFile(data, limits)
          : audio::DecodePcm(data, ToPcmFormat(config_), limits);
  if (state_.metrics() != nullptr) {
    state_.metrics()->ObserveStageSeconds(
        runtime::Stage::kDecode,
        absl::ToDoubleSeconds(absl::Now() - decode_start));
  }
  if (!wave.ok()) return FinishCall(wave.status());
  if (wave->samples.empty()) {
    return FinishCall(
        absl::InvalidArgumentError("the audio decodes to zero samples"));
  }

  std::shared_ptr<runtime::Engine> engine = state_.engine();
  if (engine == nullptr) {
    return FinishCall(absl::UnavailableError("the engine is not running"));
  }
  // Retrying cannot help a recording the backlog cannot hold at all.
  const double max_backlog_s = engine->options().max_backlog_audio_s;
  if (wave->duration_s() > max_backlog_s) {
    return FinishCall(absl::InvalidArgumentError(absl::StrCat(
        wave->duration_s(), " s of audio exceed the server's backlog limit of ",
        max_backlog_s,
        " s on their own; split the recording or stream it with Diarize")));
  }
  // Admission (engine Reserve) and the recording moved into the engine.
  absl::StatusOr<std::unique_ptr<runtime::Job>> job = engine->Submit(
      ToJobOptions(config_, ClientDeadline(context_)), std::move(wave->samples),
      runtime::JobCallbacks{.on_complete =
                                [this](absl::StatusOr<runtime::JobResult> r) {
                                  OnJobComplete(std::move(r));
                                },
                            .on_partial = nullptr});
  if (!job.ok()) return FinishCall(job.status());

  runtime::Job* handle = job->get();
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    job_ = *std::move(job);
    cancel = cancelled_;
  }
  // From here on only the job's completion finishes the call.
  if (cancel) handle->Cancel();
}

void DiarizeFileReactor::OnJobComplete(
    absl::StatusOr<runtime::JobResult> result) {
  absl::Status status = result.status();
  {
    absl::MutexLock lock(&mu_);
    if (status.code() == absl::StatusCode::kCancelled && !feed_error_.ok()) {
      status = feed_error_;
    }
  }
  if (status.code() == absl::StatusCode::kCancelled &&
      absl::Now() >= ClientDeadline(context_)) {
    status = absl::DeadlineExceededError(
        "the client's deadline passed before the result was ready");
  }
  if (result.ok()) FillResult(*result, config_, response_);
  FinishCall(status);
}

void DiarizeFileReactor::FinishCall(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
  }
  RequestLogEntry entry;
  entry.request_id = config_.request_id.empty()
                         ? request_->config().request_id()
                         : config_.request_id;
  entry.method = "DiarizeFile";
  const grpc::Status g = ToGrpcStatus(status);
  entry.code = g.error_code();
  entry.message = g.error_message();
  if (status.ok()) {
    entry.audio_s = response_->audio_s();
    entry.processing_s = response_->processing_s();
    entry.rtfx = response_->rtfx();
    entry.device = response_->device();
  }
  entry.peer = context_->peer();
  entry.wall_s = absl::ToDoubleSeconds(absl::Now() - start_time_);
  RecordCall(state_, std::move(entry));
  AddRetryHint(status, context_);
  Finish(g);
}

void DiarizeFileReactor::OnCancel() {
  runtime::Job* job = nullptr;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    job = job_.get();
  }
  // The job stays alive until this reactor is deleted (after OnDone).
  if (job != nullptr) job->Cancel();
}

void DiarizeFileReactor::OnDone() { Release(); }

void DiarizeFileReactor::AddRef() {
  absl::MutexLock lock(&mu_);
  ++refs_;
}

void DiarizeFileReactor::Release() {
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    last = --refs_ == 0;
  }
  // Deleted on the pool, never inside a gRPC or engine callback: the Job
  // handle dies with the reactor.
  if (last) state_.pool()->Post([this] { delete this; });
}

}  // namespace diarization::server
