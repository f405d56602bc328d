// The queued diarization engine: jobs, one worker per device, batching across
// jobs, host clustering on a thread pool, admission control, backpressure,
// deadlines, cancellation and a graceful drain. It knows nothing about gRPC.
//
// Usage:
//
//   std::vector<runtime::Device> devices = ...;   // e.g. one "cpu" device
//   ASSIGN_OR_RETURN(auto engine, runtime::Engine::Create(
//       runtime::EngineOptions{}, std::move(devices), plda, metrics));
//
//   // Whole recording (16 kHz mono float). Admit it before decoding, from
//   // the duration its header declares, then hand over the samples:
//   ASSIGN_OR_RETURN(runtime::Reservation r, engine->Reserve(
//       {.audio_s = header_duration_s, .peer = peer}));
//   ... decode ...
//   ASSIGN_OR_RETURN(std::unique_ptr<runtime::Job> job, engine->Submit(
//       job_options, std::move(samples),
//       {.on_complete = [](absl::StatusOr<runtime::JobResult> r) { ... }},
//       std::move(r)));
//   // job->Cancel() if the caller goes away; dropping `job` does not cancel.
//
//   // Incremental stream:
//   ASSIGN_OR_RETURN(std::unique_ptr<runtime::Job> job,
//                    engine->StartJob(job_options, callbacks));
//   RETURN_IF_ERROR(job->Append(chunk));   // as audio arrives
//   if (job->backlog_audio_s() > high_water_s) {
//     // Hold the next read; resume it from the callback.
//     job->NotifyWhenBacklogAtMost(low_water_s, [] { /* start next read */ });
//   }
//   RETURN_IF_ERROR(job->Finish());        // end of audio
//
// How a job flows. Audio is cut into pyannote's 10 s windows: window c covers
// samples [c·step, c·step + 160000) (step from the job's PipelineConfig). A
// full window is scheduled the moment the audio reaches its end; the
// zero-padded last window (pipeline::ComputeWindows) only at Finish. The job's
// device worker batches windows of all its jobs: segmentation batches (up to
// segmentation_batch_size windows), then, per window, PowersetToMultilabel +
// EmbeddingMasks on the worker, then embedding batches (up to
// embedding_batch_size windows, 3 masks each). A batch starts when it is
// full or its oldest window has waited max_batch_wait. When the stream has
// ended and every window has its embeddings, pipeline::Diarize runs on the
// host thread pool (never on a device worker) and the completion is
// delivered.
//
// Scheduling (docs/architecture.md, "Engine scheduling"): every batch takes
// windows round-robin across the jobs that have some queued (one window per
// job in turn), so each job gets an equal share of every batch however many
// windows it has queued; a ready embedding batch runs before the next
// segmentation batch, so the embedding stage is never more than one batch
// behind and a short job behind a long one completes within a few batches;
// final clusterings run before provisional ones, smallest job first, and
// with host_threads >= 2 at most host_threads - 1 provisional clusterings
// run at once, so a job whose audio has ended never waits for another job's
// provisional clustering to end (only for other final clusterings). A
// provisional clustering not yet started when its job's final one is
// queued is dropped. JobResult::tail says where a result's time went after
// the end of its audio.
//
// Admission and backpressure. The backlog is the audio accepted and not yet
// through both networks. A new call is admitted (Reserve, StartJob) only
// while the engine is under its limits: the engine backlog, one recording's
// share of it, the caller's (peer's) concurrent calls and backlog, its
// principal's share of the backlog (AdmissionRequest), and the memory
// high-water marks (EngineOptions). Refusals are RESOURCE_EXHAUSTED
// with a retry hint (RetryAfter) computed from the measured drain rate.
// Once accepted, a job is never failed for load: Job::Append always takes
// the audio, and a caller that sends faster than the devices work slows
// itself down by waiting for Job::NotifyWhenBacklogAtMost.
//
// Completion contract: every accepted job (Submit or StartJob returned OK)
// gets exactly one call of JobCallbacks::on_complete — a JobResult, or a
// status (CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE, INVALID_ARGUMENT,
// INTERNAL). Never zero, never two. A job that was not accepted (an error
// from Submit/StartJob) gets no callback, and its audio stays with the
// caller (Submit's samples are not moved from).
//
// Callback threading: callbacks (on_complete, on_partial, and the resume of
// NotifyWhenBacklogAtMost) run on engine threads, never inside the caller's
// Submit/StartJob/Append/Finish/Cancel/NotifyWhenBacklogAtMost call and
// never while the engine holds a lock, so a callback may call back into the
// engine or the Job. Callbacks of one job never run concurrently, and
// nothing of that job runs after its on_complete (a pending resume is called
// just before it). Callbacks should be quick (post work elsewhere, e.g.
// start a gRPC write); they run on the engine's callback threads, shared by
// all jobs, so they must not block, call Engine::Drain or destroy the
// Engine.
#ifndef DIARIZATION_ENGINE_RUNTIME_ENGINE_H_
#define DIARIZATION_ENGINE_RUNTIME_ENGINE_H_

// The engine's types, one concern per header; engine.h includes them all,
// so a caller of the engine needs only this one:
//   engine_options.h  EngineOptions (and their validation)
//   reservation.h     AdmissionRequest, Reservation, RetryAfter
//   job_options.h     JobOptions, JobCallbacks
//   job_results.h     JobResult, PartialResult (tail_times.h: TailTimes)
//   device_status.h   DeviceStatus
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/common/crop_edges.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_status.h"
#include "engine/runtime/engine_options.h"
#include "engine/runtime/job_options.h"
#include "engine/runtime/job_results.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/reservation.h"
#include "engine/runtime/tail_times.h"

namespace diarization::runtime {

// The caller's handle on a job. Thread-safe.
// A streaming job's handle (StartJob) cancels the job when destroyed before
// Finish(); after Finish() the job runs to completion without it. A
// recording's handle (Submit) is finished from the start: destroying it
// never cancels.
class Job {
 public:
  virtual ~Job() = default;

  // Appends 16 kHz mono float samples. Windows that become complete are
  // scheduled at once. Never fails for load: the audio is always taken (pace
  // the sender with NotifyWhenBacklogAtMost). Errors: FAILED_PRECONDITION
  // after Finish (always for a Submit job); after the job has completed
  // (cancelled, deadline, error), its final status. An error return never
  // means a second completion.
  //
  // For audio resampled from another rate, `crop_edges` are the crop edges
  // the decoder produced with these samples (audio::StreamDecoder::Push; the
  // last ones, with past_end, come with the samples of its Finish): the
  // embedding windows are then pyannote's crops of the original audio,
  // resampled alone (engine/common/crop_edges.h). Empty for 16 kHz audio.
  virtual absl::Status Append(std::span<const float> samples,
                              const CropEdges& crop_edges) = 0;
  absl::Status Append(std::span<const float> samples) {
    return Append(samples, CropEdges{});
  }
  // Append, taking the buffer: one of at least a second of audio becomes
  // part of the job's audio as it is, without a copy (a decoder's output
  // buffer, say); a shorter one is copied as by Append. The same errors;
  // `samples` is left empty or unchanged either way.
  virtual absl::Status AppendOwned(std::vector<float>&& samples,
                                   const CropEdges& crop_edges) {
    return Append(samples, crop_edges);
  }
  absl::Status AppendOwned(std::vector<float>&& samples) {
    return AppendOwned(std::move(samples), CropEdges{});
  }

  // End of audio: schedules the remaining (zero-padded) window; clustering
  // follows when all windows are done. Errors: FAILED_PRECONDITION when
  // called twice; after completion, the job's final status. A job with no
  // samples completes with INVALID_ARGUMENT.
  virtual absl::Status Finish() = 0;

  // Completes the job with CANCELLED (unless already completed) and drops
  // its queued windows from the batch queues at once. Idempotent.
  virtual void Cancel() = 0;

  // Device the job was assigned to.
  virtual const std::string& device() const = 0;
  // Seconds of audio appended so far.
  virtual double audio_received_s() const = 0;
  // This job's audio accepted and not yet through both networks, seconds;
  // 0 once the job has completed.
  virtual double backlog_audio_s() const = 0;
  // Calls `resume` exactly once, on an engine callback thread (never inside
  // this call, never under an engine lock), as soon as backlog_audio_s() <=
  // seconds — posted at once if it already is — or when the job completes
  // (then just before on_complete). A later call replaces a pending one: the
  // replaced `resume` is dropped without being called. Called after
  // on_complete was delivered, it posts `resume` at once (which then runs
  // after on_complete; the caller knows the job ended). Audio of a window
  // that has not yet arrived in full (up to 10 s plus a step) stays in the
  // backlog until more audio or Finish comes, so a threshold below about
  // 11 s may only be met at the end: pace with a higher one.
  virtual void NotifyWhenBacklogAtMost(double seconds,
                                       std::function<void()> resume) = 0;
  // Bytes of host memory the job holds now: its audio not yet needed by any
  // window, the network outputs of its windows, and its clustering inputs.
  // docs/architecture.md ("Engine memory") gives the bytes per audio hour.
  virtual int64_t memory_bytes() const = 0;
};

enum class EngineState { kServing, kDraining, kStopped };

// Thread-safe.
class Engine {
 public:
  // Starts one worker thread per device (running Device::on_worker_start)
  // and the host pool. `devices` must be non-empty with unique names and both
  // models set; options must be positive. `metrics` may be null (then the
  // engine records into a private registry, see metrics()).
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      EngineOptions options, std::vector<Device> devices,
      std::shared_ptr<const pipeline::PldaModel> plda,
      std::shared_ptr<Metrics> metrics);

  // Cancels whatever is still running (Drain(absl::Now())) and joins all
  // threads; every outstanding completion is delivered before it returns.
  virtual ~Engine() = default;

  // Admission for a new call, before any of its audio is decoded. Holds
  // request.audio_s seconds of backlog and one of the peer's calls until the
  // reservation is consumed or destroyed. Errors: UNAVAILABLE (draining or
  // stopped); INVALID_ARGUMENT (audio_s negative or not finite, or above
  // the per-request share max_request_backlog_share · max_backlog_audio_s:
  // never admissible, stream it instead); RESOURCE_EXHAUSTED with RetryAfter
  // (the backlog, the peer's calls or backlog, or memory over a high-water
  // mark).
  virtual absl::StatusOr<Reservation> Reserve(
      const AdmissionRequest& request) = 0;

  // A whole recording, admitted by `reservation` (Reserve). Never blocks on
  // device work. On OK the engine owns the job and the samples (moved from)
  // and will call on_complete exactly once; the returned handle can Cancel
  // it (dropping the handle does not). On error nothing was accepted,
  // `samples` is untouched and the reservation is released. More samples
  // than reserved are admitted for the difference (RESOURCE_EXHAUSTED if
  // they do not fit); fewer give the rest back. Errors: as Reserve, plus
  // INVALID_ARGUMENT (no samples, bad config or speaker hints, invalid
  // reservation), DEADLINE_EXCEEDED (deadline already past).
  // `crop_edges`: for audio resampled from another rate, the decoder's
  // (audio::Waveform::crop_edges; see Job::Append); empty otherwise.
  virtual absl::StatusOr<std::unique_ptr<Job>> Submit(
      const JobOptions& options, std::vector<float>&& samples,
      CropEdges&& crop_edges, JobCallbacks callbacks,
      Reservation reservation) = 0;
  absl::StatusOr<std::unique_ptr<Job>> Submit(const JobOptions& options,
                                              std::vector<float>&& samples,
                                              JobCallbacks callbacks,
                                              Reservation reservation) {
    return Submit(options, std::move(samples), CropEdges{},
                  std::move(callbacks), std::move(reservation));
  }
  // Reserve({samples' duration, options.peer}) and Submit.
  absl::StatusOr<std::unique_ptr<Job>> Submit(const JobOptions& options,
                                              std::vector<float>&& samples,
                                              JobCallbacks callbacks);

  // An incremental job; audio follows through Job::Append. The job goes to
  // the least-loaded device (least backlog, then fewest active jobs). A
  // reservation with audio_s 0 (Reserve({0, peer})) admits it; the overload
  // without one reserves with options.peer. Errors as Submit
  // (RESOURCE_EXHAUSTED when the backlog is already at its limit).
  virtual absl::StatusOr<std::unique_ptr<Job>> StartJob(
      const JobOptions& options, JobCallbacks callbacks,
      Reservation reservation) = 0;
  absl::StatusOr<std::unique_ptr<Job>> StartJob(const JobOptions& options,
                                                JobCallbacks callbacks);

  // Graceful drain: stop accepting (new jobs get UNAVAILABLE), let accepted
  // jobs finish, then stop the workers. Jobs still running at `deadline`
  // complete with UNAVAILABLE and Drain returns DEADLINE_EXCEEDED; OK when
  // all finished in time. Returns after every completion was delivered.
  // A second call waits for the first to end and returns OK.
  virtual absl::Status Drain(absl::Time deadline) = 0;

  virtual EngineState state() const = 0;
  virtual std::vector<DeviceStatus> Devices() const = 0;
  // Current admission backlog over all devices, audio seconds (accepted
  // jobs and unconsumed reservations).
  virtual double backlog_audio_s() const = 0;
  // Jobs accepted and not yet completed.
  virtual int active_jobs() const = 0;
  // Bytes held by all jobs now (the sum of Job::memory_bytes).
  virtual int64_t job_memory_bytes() const = 0;
  // Audio seconds per wall second that left the backlog recently, measured
  // over the time the backlog was not empty; 0 before any was measured.
  virtual double drain_rate() const = 0;
  virtual const EngineOptions& options() const = 0;
  virtual Metrics& metrics() = 0;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_H_
