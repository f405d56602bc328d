#include "server/diarize_file_reactor.h"

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/audio/audio.h"
#include "engine/common/shapes.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/speaker_labeler.h"
#include "server/call_context.h"
#include "server/identification.h"
#include "server/reset_flood_guard.h"
#include "server/result_convert.h"
#include "server/separate_channels.h"
#include "server/status_util.h"
#include "server/transport_events.h"
#include "server/voiceprint_call.h"

namespace diarization::server {

grpc::ServerUnaryReactor* DiarizeFileReactor::Start(
    ServiceState& state, grpc::CallbackServerContext* context,
    const v1::DiarizeFileRequest* request, v1::DiarizeResult* response) {
  auto* reactor = new DiarizeFileReactor(state, context, request, response);
  reactor->Begin();
  return reactor;
}

grpc::ServerUnaryReactor* DiarizeFileReactor::StartVoiceprint(
    ServiceState& state, grpc::CallbackServerContext* context,
    const v1::CreateVoiceprintRequest* request, v1::Voiceprint* response) {
  auto diarization = std::make_unique<v1::DiarizeResult>();
  auto* reactor = new DiarizeFileReactor(state, context, &request->recording(),
                                         diarization.get());
  reactor->voiceprint_request_ = request;
  reactor->voiceprint_ = response;
  reactor->diarization_ = std::move(diarization);
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
  if (!slot.ok()) {
    OnCallCancelled(context_->peer());
    return FinishCall(slot.status());
  }
  slot_ = *std::move(slot);

  absl::StatusOr<ValidatedConfig> config =
      ValidateConfig(request_->config(), RpcKind::kUnary, state_.limits());
  if (!config.ok()) return FinishCall(config.status());
  config_ = *std::move(config);
  // Channel labels ("ch0:...") and identification's labels would compete;
  // a voiceprint is of one speaker, so of one channel.
  if (config_.separate_channels &&
      (voiceprint_request_ != nullptr ||
       !request_->config().known_speakers().empty())) {
    return FinishCall(absl::InvalidArgumentError(
        "audio.channel_policy SEPARATE cannot be combined with "
        "known_speakers or CreateVoiceprint; use SELECT_CHANNEL to pick one "
        "channel"));
  }
  if (voiceprint_request_ != nullptr) {
    if (absl::Status s = ValidateSpeechRanges(*voiceprint_request_); !s.ok()) {
      return FinishCall(s);
    }
  } else {
    absl::StatusOr<Identification> identification = ValidateIdentification(
        request_->config(), EmbeddingModelSha256(state_), kEmbeddingDim);
    if (!identification.ok()) return FinishCall(identification.status());
    known_speakers_ = std::move(identification->known);
    identification_threshold_ = identification->threshold;
  }
  if (request_->audio().empty()) {
    return FinishCall(absl::InvalidArgumentError(
        "audio is empty; DiarizeFile needs the bytes of a WAV/FLAC/OGG file "
        "or raw PCM described by config.audio"));
  }
  slot_.MarkBusy();
  // Admission reads only the header: on the stream pool, so that it never
  // waits behind another upload's decode.
  AddRef();
  state_.pool()->Post([this] {
    AdmitAndQueue();
    Release();
  });
}

void DiarizeFileReactor::AdmitAndQueue() {
  bool cancelled;
  {
    absl::MutexLock lock(&mu_);
    cancelled = cancelled_;
  }
  if (cancelled) return FinishCall(ClientGoneStatus(context_));
  std::shared_ptr<runtime::Engine> engine = state_.engine();
  if (engine == nullptr) {
    return FinishCall(absl::UnavailableError("the engine is not running"));
  }
  if (absl::Status s = Admit(*engine); !s.ok()) return FinishCall(s);
  AddRef();
  const bool queued = state_.decode_pool()->TryPost([this] {
    DecodeAndSubmit();
    Release();
  });
  if (!queued) {
    Release();
    reservation_ = runtime::Reservation();  // give the seconds back now
    absl::Status busy = absl::ResourceExhaustedError(
        "too many uploads are waiting to be decoded; retry shortly");
    busy.SetPayload(runtime::kRetryAfterPayloadUrl, absl::Cord("1"));
    return FinishCall(busy);
  }
}

absl::Status DiarizeFileReactor::Admit(runtime::Engine& engine) {
  const std::string& bytes = request_->audio();
  const std::span<const std::byte> data(
      reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  const audio::DecodeLimits limits = ToDecodeLimits(state_.limits());
  const runtime::EngineOptions& engine_options = engine.options();
  // The most one recording may hold (Reserve refuses more as
  // INVALID_ARGUMENT): the bound for a file that does not announce its
  // length.
  const double share_cap_s = engine_options.max_request_backlog_share *
                             engine_options.max_backlog_audio_s;
  // 1. The announced duration, before any decoding.
  double announced_s = 0.0;
  if (config_.encoding == v1::ENCODED) {
    ASSIGN_OR_RETURN(file_, audio::FileDecoder::Open(data, limits));
    if (config_.channel_index != audio::kDownmix) {
      RETURN_IF_ERROR(file_->SelectChannel(config_.channel_index));
    }
    announced_s = file_->header().duration_s.value_or(
        std::min(share_cap_s, limits.max_duration_s));
  } else {
    // Raw PCM: the byte count is the duration (checked again by the decode).
    announced_s = static_cast<double>(bytes.size()) /
                  std::max(1, config_.frame_bytes()) / config_.sample_rate_hz;
    if (announced_s > limits.max_duration_s) {
      return absl::InvalidArgumentError(
          absl::StrCat("audio is too long: ", announced_s, " s, the limit is ",
                       limits.max_duration_s, " s (max_audio_s_per_request)"));
    }
  }
  // 2. Admission for it.
  runtime::AdmissionRequest request{.audio_s = announced_s,
                                    .peer = PeerKey(context_)};
  if (const auto& who = slot_.principal()) {
    request.principal = who->name;
    request.principal_backlog_share = who->limits.max_backlog_share;
  }
  absl::StatusOr<runtime::Reservation> reserved = engine.Reserve(request);
  if (!reserved.ok()) return reserved.status();
  reservation_ = *std::move(reserved);
  if (config_.separate_channels) {
    // One diarization a channel: admitted as that many recordings.
    separate_channel_count_ = file_ != nullptr ? file_->header().channel_count
                                               : config_.channel_count;
    for (int c = 1; c < separate_channel_count_; ++c) {
      absl::StatusOr<runtime::Reservation> more = engine.Reserve(request);
      if (!more.ok()) return more.status();
      channel_reservations_.push_back(*std::move(more));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<audio::Waveform> DiarizeFileReactor::Decode() {
  const std::string& bytes = request_->audio();
  const std::span<const std::byte> data(
      reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  const audio::DecodeLimits limits = ToDecodeLimits(state_.limits());
  // 3. Decode, bounded.
  const audio::DecodeControl control{
      .cancelled = [this] { return client_gone_.load(); },
      .deadline = ClientDeadline(context_),
      .max_cpu_s = state_.limits().max_decode_cpu_s};
  const absl::Time decode_start = absl::Now();
  // A little slack over the reservation: the header's count is in source
  // frames, resampling rounds.
  const double bound_s = reservation_.audio_s() + 0.01;
  absl::StatusOr<audio::Waveform> wave =
      file_ != nullptr
          ? file_->Decode(bound_s, control)
          : audio::DecodePcm(data, ToPcmFormat(config_), limits, control);
  if (state_.metrics() != nullptr) {
    state_.metrics()->ObserveStageSeconds(
        runtime::Stage::kDecode,
        absl::ToDoubleSeconds(absl::Now() - decode_start));
  }
  if (!wave.ok() && file_ != nullptr &&
      !file_->header().duration_s.has_value() &&
      absl::StrContains(wave.status().message(), "too long")) {
    return absl::InvalidArgumentError(absl::StrCat(
        wave.status().message(), "; this ", file_->header().container,
        " file does not announce its length, so it may hold at most ",
        reservation_.audio_s(),
        " s (the per-request share of the backlog); stream longer "
        "recordings with Diarize"));
  }
  return wave;
}

void DiarizeFileReactor::DecodeAndSubmit() {
  bool cancelled;
  {
    absl::MutexLock lock(&mu_);
    cancelled = cancelled_;
  }
  // OnCancel found nothing to cancel; finish here.
  if (cancelled) return FinishCall(ClientGoneStatus(context_));
  std::shared_ptr<runtime::Engine> engine = state_.engine();
  if (engine == nullptr) {
    return FinishCall(absl::UnavailableError("the engine is not running"));
  }
  if (config_.separate_channels) return DecodeAndSubmitChannels(*engine);
  absl::StatusOr<audio::Waveform> wave = Decode();
  file_.reset();
  if (!wave.ok()) return FinishCall(wave.status());
  if (wave->samples.empty()) {
    return FinishCall(
        absl::InvalidArgumentError("the audio decodes to zero samples"));
  }
  if (voiceprint_request_ != nullptr) {
    absl::StatusOr<std::vector<float>> speech =
        SelectSpeech(std::move(wave->samples), *voiceprint_request_);
    if (!speech.ok()) return FinishCall(speech.status());
    wave->samples = *std::move(speech);
    // The speech is cut and joined: no crop of the original audio is one
    // of its windows any more.
    wave->crop_edges = CropEdges{};
  }
  runtime::JobOptions options = ToJobOptions(config_, ClientDeadline(context_));
  options.peer = reservation_.peer();
  // The completion holds a reference until it has run (it finishes the call,
  // and gRPC may then run OnDone inline).
  AddRef();
  absl::StatusOr<std::unique_ptr<runtime::Job>> job = engine->Submit(
      options, std::move(wave->samples), std::move(wave->crop_edges),
      runtime::JobCallbacks{.on_complete =
                                [this](absl::StatusOr<runtime::JobResult> r) {
                                  OnJobComplete(std::move(r));
                                },
                            .on_partial = nullptr},
      std::move(reservation_));
  if (!job.ok()) {
    Release();
    return FinishCall(job.status());
  }
  KeepJob(*std::move(job));
}

void DiarizeFileReactor::KeepJob(std::unique_ptr<runtime::Job> job) {
  runtime::Job* handle = job.get();
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    job_ = std::move(job);
    cancel = cancelled_;
  }
  // From here on only the job's completion finishes the call.
  if (cancel) handle->Cancel();
}

void DiarizeFileReactor::DecodeAndSubmitChannels(runtime::Engine& engine) {
  const std::string& bytes = request_->audio();
  const std::span<const std::byte> data(
      reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  const audio::DecodeControl control{
      .cancelled = [this] { return client_gone_.load(); },
      .deadline = ClientDeadline(context_),
      .max_cpu_s = state_.limits().max_decode_cpu_s};
  const absl::Time decode_start = absl::Now();
  absl::StatusOr<std::vector<audio::Waveform>> channels = DecodeEachChannel(
      data, file_ != nullptr, ToPcmFormat(config_), separate_channel_count_,
      ToDecodeLimits(state_.limits()), reservation_.audio_s() + 0.01, control);
  file_.reset();
  if (state_.metrics() != nullptr) {
    state_.metrics()->ObserveStageSeconds(
        runtime::Stage::kDecode,
        absl::ToDoubleSeconds(absl::Now() - decode_start));
  }
  if (!channels.ok()) return FinishCall(channels.status());
  for (const audio::Waveform& channel : *channels) {
    if (channel.samples.empty()) {
      return FinishCall(
          absl::InvalidArgumentError("the audio decodes to zero samples"));
    }
  }
  runtime::JobOptions options = ToJobOptions(config_, ClientDeadline(context_));
  options.peer = reservation_.peer();
  std::vector<runtime::Reservation> reservations;
  reservations.push_back(std::move(reservation_));
  for (runtime::Reservation& r : channel_reservations_) {
    reservations.push_back(std::move(r));
  }
  channel_reservations_.clear();
  AddRef();
  absl::StatusOr<std::unique_ptr<runtime::Job>> job = SubmitPerChannel(
      engine, options, *std::move(channels),
      runtime::JobCallbacks{.on_complete =
                                [this](absl::StatusOr<runtime::JobResult> r) {
                                  OnJobComplete(std::move(r));
                                },
                            .on_partial = nullptr},
      std::move(reservations));
  if (!job.ok()) {
    Release();
    return FinishCall(job.status());
  }
  KeepJob(*std::move(job));
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
  if (status.code() == absl::StatusCode::kCancelled ||
      status.code() == absl::StatusCode::kDeadlineExceeded) {
    absl::MutexLock lock(&mu_);
    if (cancelled_ || absl::Now() >= ClientDeadline(context_)) {
      status = ClientGoneStatus(context_);
    }
  }
  if (result.ok()) {
    if (known_speakers_.empty()) {
      FillResult(*result, config_, response_);
    } else {
      pipeline::SpeakerLabeler labeler(std::move(known_speakers_),
                                       identification_threshold_,
                                       /*stable_labels=*/false);
      FillResult(*result, config_, response_, &labeler);
    }
    if (config_.separate_channels) {
      response_->set_rttm(RttmWithChannelColumn(response_->rttm()));
      if (!response_->exclusive_rttm().empty()) {
        response_->set_exclusive_rttm(
            RttmWithChannelColumn(response_->exclusive_rttm()));
      }
    }
    if (voiceprint_ != nullptr) {
      status =
          FillVoiceprint(*result, EmbeddingModelSha256(state_), voiceprint_);
    }
    absl::MutexLock lock(&mu_);
    tail_ = result->tail;
  }
  FinishCall(status);
  Release();  // the job's reference (DecodeAndSubmit)
}

void DiarizeFileReactor::FinishCall(const absl::Status& given) {
  absl::Status status = given;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    // A client that left sees CANCELLED or DEADLINE_EXCEEDED whatever we
    // answer; the log records what it saw, with our reason.
    if (!status.ok() && (cancelled_ || client_gone_.load())) {
      const absl::Status gone = ClientGoneStatus(context_);
      if (status.code() != gone.code()) {
        status = absl::Status(gone.code(),
                              absl::StrCat(gone.message(), " (the server had: ",
                                           status.message(), ")"));
      }
    }
  }
  RequestLogEntry entry;
  entry.request_id = config_.request_id.empty()
                         ? request_->config().request_id()
                         : config_.request_id;
  entry.method =
      voiceprint_request_ != nullptr ? "CreateVoiceprint" : "DiarizeFile";
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
  {
    absl::MutexLock lock(&mu_);
    if (status.ok() && tail_.has_value()) entry.extra = TailLogFields(*tail_);
  }
  RecordCall(state_, std::move(entry));
  AddRetryHint(status, context_);
  slot_.ReleaseAdmission();
  response_deadline_.WriteStarted(absl::InfiniteFuture());
  Finish(g);
}

void DiarizeFileReactor::OnResponseUnread() {
  CountTransportEvent(TransportEvent::kUnreadResponse);
  if (!LogRateLimit::Get().Allow(LogRateLimit::kEventKind)) return;
  LogEvent("response_unread",
           absl::StrCat("DiarizeFile from ", context_->peer(),
                        ": the response waited unread for write_timeout_s (",
                        state_.limits().write_timeout_s,
                        " s); the call was cancelled (its status, logged "
                        "before, was not delivered)"));
}

void DiarizeFileReactor::OnCancel() {
  // The slot comes back now, not after the pool gets to this call.
  slot_.ReleaseAdmissionOnCancel();
  OnCallCancelled(context_->peer());
  runtime::Job* job = nullptr;
  client_gone_ = true;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    job = job_.get();
  }
  // The job stays alive until this reactor is deleted (after OnDone).
  if (job != nullptr) job->Cancel();
}

void DiarizeFileReactor::OnDone() {
  response_deadline_.CallDone();
  Release();
}

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
