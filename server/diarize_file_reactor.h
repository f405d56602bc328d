// The unary DiarizeFile call: one reactor per call.
//
// The gRPC thread that starts the call only admits and validates the config;
// steps 1-2 run on the stream pool (cheap: no decoding), step 3 on the
// decode pool (kept apart, at a lower CPU priority, so an upload's decode
// never delays a stream's messages or another upload's admission):
//   1. read the container's header (no decoding) or, for raw PCM, the byte
//      count: the announced duration;
//   2. admission for that duration (Engine::Reserve: backlog, per-request
//      share, per-peer limits) — a refusal costs no decoding;
//   3. decode, bounded by the reserved duration (a header that lies cannot
//      make it decode or allocate more), max_decode_cpu_s of CPU, the
//      client's deadline and the client's presence (checked every block);
//   4. Engine::Submit moves the samples into the job with the reservation.
// The engine's completion finishes the call. OnCancel (client gone, or its
// deadline) stops the decode or cancels the job. The reactor deletes itself
// once gRPC is done with it and no pool task still refers to it.
#ifndef DIARIZATION_SERVER_DIARIZE_FILE_REACTOR_H_
#define DIARIZATION_SERVER_DIARIZE_FILE_REACTOR_H_

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "engine/pipeline/identify.h"
#include "engine/runtime/engine.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/request_validation.h"
#include "server/response_deadline.h"
#include "server/service_state.h"

namespace diarization::server {

class DiarizeFileReactor : public grpc::ServerUnaryReactor {
 public:
  // Returns the reactor for gRPC; the call is under way.
  static grpc::ServerUnaryReactor* Start(ServiceState& state,
                                         grpc::CallbackServerContext* context,
                                         const v1::DiarizeFileRequest* request,
                                         v1::DiarizeResult* response);
  // CreateVoiceprint: the same steps on request->recording(), then the
  // voiceprint of the diarization (voiceprint_call.h) instead of it.
  static grpc::ServerUnaryReactor* StartVoiceprint(
      ServiceState& state, grpc::CallbackServerContext* context,
      const v1::CreateVoiceprintRequest* request, v1::Voiceprint* response);

  void OnCancel() override;
  void OnDone() override;

 private:
  DiarizeFileReactor(ServiceState& state, grpc::CallbackServerContext* context,
                     const v1::DiarizeFileRequest* request,
                     v1::DiarizeResult* response);
  ~DiarizeFileReactor() override = default;

  void Begin();
  // On the stream pool: steps 1-2 (header, Reserve), then queue the decode.
  void AdmitAndQueue();
  absl::Status Admit(runtime::Engine& engine);
  // On the decode pool: step 3, then Submit with the reservation.
  void DecodeAndSubmit();
  absl::StatusOr<audio::Waveform> Decode();
  // ChannelPolicy SEPARATE: decode each channel, one job a channel
  // (server/separate_channels.h).
  void DecodeAndSubmitChannels(runtime::Engine& engine);
  void KeepJob(std::unique_ptr<runtime::Job> job);
  void OnJobComplete(absl::StatusOr<runtime::JobResult> result);
  // Logs, records metrics and finishes the call with `status`.
  void FinishCall(const absl::Status& status);
  // Reference counting: gRPC holds one reference until OnDone, each pool
  // task one while it runs.
  void AddRef();
  void Release();

  ServiceState& state_;
  grpc::CallbackServerContext* const context_;
  const v1::DiarizeFileRequest* const request_;
  v1::DiarizeResult* const response_;
  // CreateVoiceprint only (else null): its request and answer, and the
  // diarization it is made from (for the log line).
  const v1::CreateVoiceprintRequest* voiceprint_request_ = nullptr;
  v1::Voiceprint* voiceprint_ = nullptr;
  std::unique_ptr<v1::DiarizeResult> diarization_;
  // DiarizeFile: the known speakers, validated in Begin.
  std::vector<pipeline::KnownSpeaker> known_speakers_;
  double identification_threshold_ = 0.0;
  const absl::Time start_time_;
  CallSlot slot_;
  ValidatedConfig config_;
  // Set by Admit, used by the decode (one task at a time, in order).
  std::unique_ptr<audio::FileDecoder> file_;
  runtime::Reservation reservation_;
  // SEPARATE: the reservations of channels 1, 2, ... (reservation_ is
  // channel 0's) and the channel count.
  std::vector<runtime::Reservation> channel_reservations_;
  int separate_channel_count_ = 0;

  // Ends the call when its response waits unread (issue 39).
  ResponseDeadline response_deadline_{state_, context_, [this] { AddRef(); },
                                      [this] { Release(); },
                                      [this] { OnResponseUnread(); }};
  void OnResponseUnread();

  // Set by OnCancel; polled by the decode.
  std::atomic<bool> client_gone_{false};

  absl::Mutex mu_;
  int refs_ ABSL_GUARDED_BY(mu_) = 1;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // An error found while feeding the job (reported instead of the CANCELLED
  // that the job completes with after we cancel it).
  absl::Status feed_error_ ABSL_GUARDED_BY(mu_);
  // The job's TailTimes, for the log line (a job that completed OK).
  std::optional<runtime::TailTimes> tail_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<runtime::Job> job_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_DIARIZE_FILE_REACTOR_H_
