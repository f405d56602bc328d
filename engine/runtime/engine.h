// The queued diarization engine: jobs, one worker per device, batching across
// jobs, host clustering on a thread pool, admission control, deadlines,
// cancellation and a graceful drain. It knows nothing about gRPC.
//
// Usage:
//
//   std::vector<runtime::Device> devices = ...;   // e.g. one "cpu" device
//   ASSIGN_OR_RETURN(auto engine, runtime::Engine::Create(
//       runtime::EngineOptions{}, std::move(devices), plda, metrics));
//
//   // Whole recording (16 kHz mono float):
//   RETURN_IF_ERROR(engine->Submit(job_options, std::move(samples),
//       {.on_complete = [](absl::StatusOr<runtime::JobResult> r) { ... }}));
//
//   // Incremental stream:
//   ASSIGN_OR_RETURN(std::unique_ptr<runtime::Job> job,
//                    engine->StartJob(job_options, callbacks));
//   RETURN_IF_ERROR(job->Append(chunk));   // as audio arrives
//   RETURN_IF_ERROR(job->Finish());        // end of audio
//
// How a job flows. Audio is cut into pyannote's 10 s windows: window c covers
// samples [c·step, c·step + 160000) (step from the job's PipelineConfig). A
// full window is scheduled the moment the audio reaches its end; the
// zero-padded last window (pipeline::ComputeChunks) only at Finish. The job's
// device worker batches windows of all its jobs, taking them round-robin
// across jobs (a long file does not hold back streams; with
// Device::concurrent_stages the two stages run on two threads): segmentation
// batches (up to segmentation_batch_size windows), then, per window,
// PowersetToMultilabel + EmbeddingMasks on the worker, then embedding
// batches (up to embedding_batch_size windows, 3 masks each). A batch starts when it is full
// or its oldest window has waited max_batch_wait. When the stream has ended
// and every window has its embeddings, pipeline::Diarize runs on the host
// thread pool (never on a device worker) and the completion is delivered.
//
// Completion contract: every accepted job (Submit or StartJob returned OK)
// gets exactly one call of JobCallbacks::on_complete — a JobResult, or a
// status (CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE,
// INVALID_ARGUMENT, INTERNAL). Never zero, never two. A job that was not
// accepted (an error from Submit/StartJob) gets no callback, and its audio
// stays with the caller.
//
// Callback threading: callbacks run on engine threads, never inside the
// caller's Submit/StartJob/Append/Finish/Cancel call and never while the
// engine holds a lock, so a callback may call back into the engine or the
// Job. Callbacks of one job never run concurrently, and no on_partial call
// follows that job's on_complete. Callbacks should be quick (post work
// elsewhere, e.g. start a gRPC write); they run on the clustering pool, so
// they must not call Engine::Drain or destroy the Engine.
#ifndef DIARIZATION_ENGINE_RUNTIME_ENGINE_H_
#define DIARIZATION_ENGINE_RUNTIME_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"
#include "engine/runtime/device.h"
#include "engine/runtime/metrics.h"

namespace diarization::runtime {

inline constexpr int kSampleRateHz = 16000;

// The host stages after the networks; pipeline::Diarize with the engine's
// PLDA by default. Tests may replace it to observe exactly what the engine
// feeds the host pipeline. segmentations: (C × 589 × 3) 0/1;
// embeddings: (C × 3 × 256). Must be thread-safe.
using ClusterFunction =
    std::function<absl::StatusOr<pipeline::DiarizationOutput>(
        std::span<const float> segmentations, std::span<const float> embeddings,
        int num_chunks, const pipeline::PipelineConfig& config,
        const pipeline::SpeakerHints& hints)>;

struct EngineOptions {
  // Windows per network batch. An embedding batch window carries its 3 local
  // speaker masks (the model runs fbank + trunk once per window).
  int segmentation_batch_size = 32;
  int embedding_batch_size = 32;
  // A partial batch starts once its oldest window has waited this long.
  absl::Duration max_batch_wait = absl::Milliseconds(5);

  // Admission control: audio seconds accepted and not yet through both
  // networks, over all jobs. Past it, Submit/StartJob/Append fail with
  // RESOURCE_EXHAUSTED and a retry hint (RetryAfter()).
  double max_backlog_audio_s = 3600.0;

  // Threads of the host pool (clustering, partial clustering, callbacks).
  int host_threads = 2;

  // Optional replacement for pipeline::Diarize (see ClusterFunction).
  ClusterFunction cluster_function;
};

struct JobOptions {
  // Echoed in JobResult / PartialResult; the engine does not interpret it.
  std::string request_id;
  // Accurate() (community-1) or Fast(); step_samples must be > 0.
  pipeline::PipelineConfig config = pipeline::PipelineConfig::Accurate();
  pipeline::SpeakerHints hints;
  // Past it the job completes with DEADLINE_EXCEEDED and its queued windows
  // are dropped at once. InfiniteFuture = none.
  absl::Time deadline = absl::InfiniteFuture();
  // > 0: provisional clustering of the audio processed so far each time
  // another partial_interval_s seconds of audio have gone through both
  // networks (streams only; calls JobCallbacks::on_partial). At most one
  // provisional clustering per job runs at a time; intervals that pass while
  // one runs are merged into the next. 0 = none.
  double partial_interval_s = 0.0;
  // Copy the per-window network outputs into JobResult (tests, tools).
  bool return_intermediates = false;
};

struct JobResult {
  std::string request_id;
  // Segments (regular and exclusive views), labels, centroids.
  pipeline::DiarizationOutput output;
  // Number of windows (chunks) that went through the networks.
  int num_chunks = 0;
  // Seconds of 16 kHz audio in the job.
  double audio_s = 0.0;
  // Wall seconds from the end of the audio (Finish, or Submit) to the
  // result, plus this job's share of device batch time spent before the end
  // of the audio (a batch's time is shared by its windows).
  double processing_s = 0.0;
  // audio_s / processing_s.
  double rtfx = 0.0;
  // Device that ran the networks ("cpu", "cuda:0", ...).
  std::string device;
  // Seconds from acceptance to the first window's batch start (queue wait
  // of the job's first window).
  double first_window_wait_s = 0.0;
  // Only with JobOptions::return_intermediates: (C × 589 × 3) binarized
  // segmentations and (C × 3 × 256) embeddings, chunk-major.
  std::vector<float> segmentations;
  std::vector<float> embeddings;
};

struct PartialResult {
  std::string request_id;
  // Seconds of audio appended so far.
  double audio_received_s = 0.0;
  // Seconds of audio covered by the windows that have gone through both
  // networks (windows 0..k-1: (k-1)·step + 10 s, at most audio_received_s).
  double audio_processed_s = 0.0;
  // Provisional regular-view segments; labels may change in the final result.
  std::vector<Segment> segments;
  std::vector<Segment> exclusive_segments;
};

struct JobCallbacks {
  // Required. Exactly once per accepted job (see the completion contract).
  std::function<void(absl::StatusOr<JobResult>)> on_complete;
  // Optional; only with JobOptions::partial_interval_s > 0.
  std::function<void(PartialResult)> on_partial;
};

// The caller's handle on an incremental (streaming) job. Thread-safe.
// Destroying the handle before Finish() cancels the job; after Finish() the
// job runs to completion without it.
class Job {
 public:
  virtual ~Job() = default;

  // Appends 16 kHz mono float samples. Windows that become complete are
  // scheduled at once. Errors: FAILED_PRECONDITION after Finish;
  // RESOURCE_EXHAUSTED when the samples would push the engine backlog past
  // its limit — the job then completes with that status (with RetryAfter);
  // after the job has completed (cancelled, deadline, error), its final
  // status. An error return never means a second completion.
  virtual absl::Status Append(std::span<const float> samples) = 0;

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
};

enum class EngineState { kServing, kDraining, kStopped };

// For GetInfo and health checks.
struct DeviceStatus {
  std::string name;
  std::string description;
  // False after a network batch failed on this device (until one succeeds).
  bool healthy = true;
  std::string segmentation_precision;
  std::string embedding_precision;
  DeviceMemoryStats memory;
  // Jobs assigned and not yet completed.
  int active_jobs = 0;
  // Windows waiting in the two batch queues.
  int segmentation_queue_depth = 0;
  int embedding_queue_depth = 0;
  // Accepted audio seconds on this device not yet through both networks.
  double backlog_audio_s = 0.0;
  // Rolling RTFx (see diarization_device_rtfx in metrics.h).
  double rtfx = 0.0;
};

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

  // A whole recording. Never blocks on device work. On OK the engine owns
  // the job and will call on_complete exactly once; on error nothing was
  // accepted. Errors: RESOURCE_EXHAUSTED (backlog full; see RetryAfter),
  // UNAVAILABLE (draining or stopped), INVALID_ARGUMENT (no samples, bad
  // config or speaker hints, or longer than max_backlog_audio_s on its own),
  // DEADLINE_EXCEEDED (deadline already past).
  virtual absl::Status Submit(const JobOptions& options,
                              std::vector<float> samples,
                              JobCallbacks callbacks) = 0;

  // An incremental job; audio follows through Job::Append. The job goes to
  // the least-loaded device (least backlog, then fewest active jobs).
  // Errors as Submit (RESOURCE_EXHAUSTED when the backlog is already at its
  // limit).
  virtual absl::StatusOr<std::unique_ptr<Job>> StartJob(
      const JobOptions& options, JobCallbacks callbacks) = 0;

  // Graceful drain: stop accepting (new jobs get UNAVAILABLE), let accepted
  // jobs finish, then stop the workers. Jobs still running at `deadline`
  // complete with UNAVAILABLE and Drain returns DEADLINE_EXCEEDED; OK when
  // all finished in time. Returns after every completion was delivered.
  // A second call waits for the first to end and returns OK.
  virtual absl::Status Drain(absl::Time deadline) = 0;

  virtual EngineState state() const = 0;
  virtual std::vector<DeviceStatus> Devices() const = 0;
  // Current admission backlog over all devices, audio seconds.
  virtual double backlog_audio_s() const = 0;
  // Jobs accepted and not yet completed.
  virtual int active_jobs() const = 0;
  virtual const EngineOptions& options() const = 0;
  virtual Metrics& metrics() = 0;
};

// The retry hint carried by RESOURCE_EXHAUSTED statuses from the engine:
// an estimate of the seconds until the backlog has room for the request
// (backlog excess / recent device throughput, at least 1 s). nullopt for
// statuses without it. The server maps it to gRPC (e.g. a
// "retry-after-s" trailing metadata entry or google.rpc.RetryInfo).
std::optional<double> RetryAfter(const absl::Status& status);
// The absl::Status payload URL that holds it (decimal seconds as text).
inline constexpr char kRetryAfterPayloadUrl[] =
    "type.googleapis.com/diarization.RetryAfterSeconds";

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_H_
