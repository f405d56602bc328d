#include "server/stream_session.h"

#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"

namespace diarization::server {

StreamSession::StreamSession(const ServiceLimits& limits, StreamJobSink* sink)
    : limits_(limits), sink_(sink) {}

double StreamSession::appended_s() const {
  return static_cast<double>(appended_samples_) / kSampleRateHz;
}

absl::Status StreamSession::Fail(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
  return error_;
}

absl::Status StreamSession::OnMessage(const v1::DiarizeRequest& request) {
  if (!error_.ok()) return error_;
  if (finished_) {
    return Fail(
        absl::FailedPreconditionError("a message after the end of the stream"));
  }
  switch (request.request_case()) {
    case v1::DiarizeRequest::kConfig:
      if (has_config()) {
        return Fail(absl::InvalidArgumentError(
            "config was sent twice; only the first DiarizeRequest may carry "
            "config, later ones carry audio"));
      }
      return HandleConfig(request.config());
    case v1::DiarizeRequest::kAudio:
      if (!has_config()) {
        return Fail(absl::InvalidArgumentError(
            "the first DiarizeRequest must carry config (encoding, sample "
            "rate, ...); this one carries audio"));
      }
      return HandleAudio(request.audio());
    default:
      return Fail(absl::InvalidArgumentError(
          has_config() ? "a DiarizeRequest carries neither config nor audio"
                       : "the first DiarizeRequest must carry config; this "
                         "one carries nothing"));
  }
}

absl::Status StreamSession::HandleConfig(const v1::DiarizationConfig& c) {
  sent_request_id_ = c.request_id().substr(0, 128);
  absl::StatusOr<ValidatedConfig> config =
      ValidateConfig(c, RpcKind::kStream, limits_);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<std::unique_ptr<audio::StreamDecoder>> decoder =
      audio::StreamDecoder::Create(ToPcmFormat(*config),
                                   ToDecodeLimits(limits_));
  if (!decoder.ok()) return Fail(decoder.status());
  if (absl::Status s = sink_->Start(*config); !s.ok()) return Fail(s);
  config_ = std::make_unique<ValidatedConfig>(*std::move(config));
  decoder_ = *std::move(decoder);
  return absl::OkStatus();
}

absl::Status StreamSession::HandleAudio(const std::string& bytes) {
  samples_.clear();
  crop_edges_.seconds.clear();
  absl::Status s = decoder_->Push(
      std::span<const std::byte>(
          reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()),
      samples_, &crop_edges_);
  if (!s.ok()) return Fail(s);
  if (samples_.empty() && crop_edges_.seconds.empty()) {
    return absl::OkStatus();
  }
  const int64_t n = static_cast<int64_t>(samples_.size());
  // The decoder's buffer goes to the job as it is when it is large
  // (runtime::Job::AppendOwned: no copy); a small one is copied and
  // samples_ is reused.
  s = sink_->AppendOwned(std::move(samples_), crop_edges_);
  if (!s.ok()) return Fail(s);
  appended_samples_ += n;
  return absl::OkStatus();
}

absl::Status StreamSession::OnEndOfInput() {
  if (!error_.ok()) return error_;
  if (finished_) {
    return Fail(absl::FailedPreconditionError("the stream ended twice"));
  }
  if (!has_config()) {
    return Fail(absl::InvalidArgumentError(
        "the stream ended before its first DiarizeRequest (config)"));
  }
  samples_.clear();
  crop_edges_.seconds.clear();
  absl::Status s = decoder_->Finish(samples_, &crop_edges_);
  if (!s.ok()) return Fail(s);
  // The last edges (past_end) come even without samples.
  if (!samples_.empty() || !crop_edges_.empty()) {
    const int64_t n = static_cast<int64_t>(samples_.size());
    s = sink_->AppendOwned(std::move(samples_), crop_edges_);
    if (!s.ok()) return Fail(s);
    appended_samples_ += n;
  }
  finished_ = true;
  s = sink_->Finish();
  if (!s.ok()) return Fail(s);
  return absl::OkStatus();
}

}  // namespace diarization::server
