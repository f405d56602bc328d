// The message sequencing of one Diarize stream, without gRPC: which message
// may come when (config first and once, then audio, then the half-close),
// config validation, decoding each chunk, and what is asked of the engine
// job. The reactor (diarize_reactor.h) feeds it the messages it reads, one
// at a time, on its pool; the request fuzzer (request_fuzzer.cc) feeds it
// arbitrary bytes with a fake job. Not thread-safe: one caller at a time.
//
// Rules (docs/api.md): the first message carries config, later ones audio;
// a second config, audio first, an empty message, a half-close before the
// config, bad audio bytes or too much audio end the stream with
// INVALID_ARGUMENT; the job's own refusals (UNAVAILABLE, ...) end it with
// theirs. After any error the session is over: every later call returns the
// same error and touches the job no more.
#ifndef DIARIZATION_SERVER_STREAM_SESSION_H_
#define DIARIZATION_SERVER_STREAM_SESSION_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "server/limits.h"
#include "server/request_validation.h"

namespace diarization::server {

// What the session asks of the engine job. Start is called at most once,
// before any Append; Finish at most once, last.
class StreamJobSink {
 public:
  virtual ~StreamJobSink() = default;
  virtual absl::Status Start(const ValidatedConfig& config) = 0;
  // 16 kHz mono samples and, for audio at another rate, the crop edges
  // that came with them (runtime::Job::Append); never both empty.
  virtual absl::Status Append(std::span<const float> samples,
                              const CropEdges& crop_edges) = 0;
  // The same, taking the decoder's buffer (runtime::Job::AppendOwned keeps
  // a large one without a copy).
  virtual absl::Status AppendOwned(std::vector<float>&& samples,
                                   const CropEdges& crop_edges) {
    return Append(samples, crop_edges);
  }
  virtual absl::Status Finish() = 0;
};

class StreamSession {
 public:
  // `sink` must outlive the session.
  StreamSession(const ServiceLimits& limits, StreamJobSink* sink);

  // One message read from the client. OK: read the next one.
  absl::Status OnMessage(const v1::DiarizeRequest& request);
  // The client half-closed: flushes the decoder, finishes the job.
  absl::Status OnEndOfInput();

  bool has_config() const { return config_ != nullptr; }
  // Only after has_config().
  const ValidatedConfig& config() const { return *config_; }
  // The client's request_id as sent in the config (for the log line even
  // when the config is refused); empty before.
  const std::string& sent_request_id() const { return sent_request_id_; }
  // Seconds of (16 kHz) audio appended to the job.
  double appended_s() const;
  bool finished() const { return finished_; }

 private:
  absl::Status Fail(absl::Status status);
  absl::Status HandleConfig(const v1::DiarizationConfig& config);
  absl::Status HandleAudio(const std::string& bytes);

  const ServiceLimits limits_;
  StreamJobSink* const sink_;
  std::unique_ptr<ValidatedConfig> config_;
  std::unique_ptr<audio::StreamDecoder> decoder_;
  std::string sent_request_id_;
  // The decoder's output per chunk: handed to the job when large, else
  // reused.
  std::vector<float> samples_;
  CropEdges crop_edges_;  // reused per chunk
  int64_t appended_samples_ = 0;
  bool finished_ = false;
  absl::Status error_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_STREAM_SESSION_H_
