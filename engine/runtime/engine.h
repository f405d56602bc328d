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

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/common/crop_edges.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/segment.h"
#include "engine/runtime/device.h"
#include "engine/runtime/metrics.h"

namespace diarization::runtime {

namespace internal {
class AdmissionLedger;
class EngineImpl;
}  // namespace internal

// The host stages after the networks; pipeline::Diarize with the engine's
// PLDA by default. Tests may replace it to observe exactly what the engine
// feeds the host pipeline. segmentations: (C × 589 × 3) 0/1;
// embeddings: (C × 3 × 256). Must be thread-safe.
using ClusterFunction =
    std::function<absl::StatusOr<pipeline::DiarizationOutput>(
        std::span<const float> segmentations, std::span<const float> embeddings,
        int num_windows, const pipeline::PipelineConfig& config,
        const pipeline::SpeakerHints& hints)>;

// The CPU backend's batch sizes: runtime::DefaultBatchSizes (devices.h).

struct EngineOptions {
  // Windows per network batch. An embedding batch window carries its 3 local
  // speaker masks (the model runs fbank + trunk once per window). The
  // segmentation default is the CUDA one (docs/benchmarks.md "Segmentation
  // batch inside 2 GiB"): the LSTM recurrence takes about as long for 128
  // windows as for 32, so segmentation falls from 1.98 to 0.85 s per audio
  // hour (H200), and one pipeline's arena stays at 1.72 GiB next to an
  // embedding batch of 32. 192 and 224 would fit too (1.90, 1.99 GiB); they
  // were ruled out while DeviceWorker held segmentation back at two queued
  // embedding batches, which they outlast. It now holds back at one
  // segmentation batch and one embedding batch, and they have not been
  // measured since.
  int segmentation_batch_size = 128;
  int embedding_batch_size = 32;
  // A partial batch starts once its oldest window has waited this long.
  absl::Duration max_batch_wait = absl::Milliseconds(5);
  // Windows of streaming jobs go before all others, in batches of their
  // own, in either stage: a live window then waits for at most the batch
  // in progress (one piece of bulk work) instead of the bulk batches queued
  // before it, and never shares its batch with bulk windows. For devices
  // where a batch costs about the sum of its windows (the CPU: a live
  // window in a batch of 4 took 4 windows' time); on a GPU a batch costs
  // little more than one window and the round-robin rule already serves a
  // stream in the next batch. The server turns it on for the CPU
  // (runtime::DefaultBatchSizes, issue 39). Results are the same: a
  // window's outputs do not depend on its batch-mates.
  bool live_windows_first = false;

  // --- Admission (checked for a new call only; never for an accepted
  // job's Append). Refusals are RESOURCE_EXHAUSTED with RetryAfter. ---
  // Audio seconds accepted and not yet through both networks, over all
  // jobs. A recording is admitted when it fits under the limit; a stream
  // while the backlog is below it (a stream then grows the backlog as its
  // audio arrives, paced by NotifyWhenBacklogAtMost).
  double max_backlog_audio_s = 3600.0;
  // One recording (Reserve with audio_s > 0) may hold at most this share of
  // max_backlog_audio_s; a longer one is INVALID_ARGUMENT (stream it
  // instead). In (0, 1]. The default 1 caps nothing; a server sets its
  // policy (e.g. 0.25, so one small file that decodes to an hour cannot take
  // the whole backlog).
  double max_request_backlog_share = 1.0;
  // Per peer (AdmissionRequest::peer, JobOptions::peer; calls with an empty
  // peer are not counted): calls admitted and not yet completed, and their
  // backlog seconds. 0 = no limit.
  int max_calls_per_peer = 0;
  double max_peer_backlog_audio_s = 0.0;
  // Memory high-water marks; 0 = none. While the bytes held by jobs
  // (Engine::job_memory_bytes) or the process's resident set exceed them,
  // new calls are refused.
  int64_t max_job_memory_bytes = 0;
  int64_t max_process_rss_bytes = 0;
  // How the engine reads the process's resident set, bytes. Unset: from
  // /proc/self/statm. Tests inject one. Must be thread-safe.
  std::function<int64_t()> process_rss_bytes;
  // After a job that held at least this many bytes completes, the engine
  // returns free heap memory to the OS (glibc malloc_trim) on a host thread.
  // 0 = never.
  int64_t trim_after_job_bytes = int64_t{64} << 20;

  // Threads of the host pool (final and partial clustering).
  int host_threads = 2;
  // Threads of the BLAS library (OpenBLAS) per call of the host pipeline,
  // set process-wide at Create. 0 = the library's own setting (every core,
  // or OPENBLAS_NUM_THREADS). With many host threads clustering at once,
  // 1 keeps them off one another's cores (the parallelism is then the host
  // threads'); the results do not depend on it.
  int clustering_blas_threads = 0;
  // Threads that run the jobs' callbacks (kept apart from clustering, so a
  // long clustering never delays another job's resume or result).
  int callback_threads = 2;

  // Optional replacement for pipeline::Diarize (see ClusterFunction).
  ClusterFunction cluster_function;
};

// What a new call asks of admission control (Engine::Reserve).
struct AdmissionRequest {
  // Seconds of audio the call brings at once: a recording's duration (from
  // its header, before decoding). 0 for a stream, whose audio is counted as
  // it arrives.
  double audio_s = 0.0;
  // Who is asking (an authenticated principal, else the peer address); the
  // key of the per-peer limits. Empty: not subject to per-peer limits.
  std::string peer;
  // The caller's authenticated principal (a token's name; empty: none) and
  // its own limit: all calls of one principal together may hold at most
  // this share of max_backlog_audio_s (in (0, 1]; 0 = no own limit). Checked
  // like the engine backlog: a recording must fit under it, a stream is
  // admitted while the principal is below it.
  std::string principal;
  double principal_backlog_share = 0.0;
};

// Admitted capacity for one call, held until a job consumes it (Submit,
// StartJob) or it is destroyed unused (which gives it back). Move-only;
// thread-compatible. May outlive the Engine (then it releases nothing).
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation();

  // False for a default-constructed or consumed reservation.
  bool valid() const { return ledger_ != nullptr; }
  double audio_s() const { return audio_s_; }
  const std::string& peer() const { return peer_; }

 private:
  friend class internal::AdmissionLedger;
  friend class internal::EngineImpl;
  Reservation(std::shared_ptr<internal::AdmissionLedger> ledger,
              uint64_t ticket, double audio_s, std::string peer);
  // Hands the ticket to a job; the reservation becomes invalid.
  uint64_t Consume();

  std::shared_ptr<internal::AdmissionLedger> ledger_;
  uint64_t ticket_ = 0;
  double audio_s_ = 0.0;
  std::string peer_;
};

struct JobOptions {
  // Echoed in JobResult / PartialResult; the engine does not interpret it.
  std::string request_id;
  // The caller, for per-peer limits (see AdmissionRequest::peer). Used by
  // StartJob without a reservation; Submit takes the reservation's.
  std::string peer;
  // The principal and its backlog share (see AdmissionRequest), for
  // Submit and StartJob without a reservation.
  std::string principal;
  double principal_backlog_share = 0.0;
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

// Where a job's time went from the end of its audio (Finish, or Submit) to
// the delivery of its result (the call of on_complete), seconds. The seven
// parts follow one another and add up to total_s. The network parts follow
// the job's last window to get its embeddings (the critical one); the part
// of its path that lay before the end of the audio counts as 0, so all are
// 0 when every window was through both networks by then.
struct TailTimes {
  // The last window: queued for its segmentation batch; in that batch;
  // from the batch's end to its embedding batch's start (the masks, then
  // the embedding queue); in the embedding batch.
  double segmentation_wait_s = 0.0;
  double segmentation_s = 0.0;
  double embedding_wait_s = 0.0;
  double embedding_s = 0.0;
  // From the last window's embeddings to a host thread taking the final
  // clustering (host threads busy with other clusterings).
  double host_wait_s = 0.0;
  // Gathering the windows' outputs and the cluster function
  // (pipeline::Diarize) on the host thread.
  double clustering_s = 0.0;
  // From the clustering's end to the call of on_complete (the completion's
  // turn on the callback threads).
  double delivery_s = 0.0;
  double total_s = 0.0;
  // The host pool when the final clustering was queued: clusterings running
  // (final, provisional) and final clusterings queued ahead of this one.
  int finals_running = 0;
  int partials_running = 0;
  int finals_queued = 0;

  // The durations above by name, the total first: the `part` label of
  // diarization_tail_seconds, and tail_<name>_s in the server's call log
  // (tail_s for the total). One list, so the two never disagree.
  std::array<std::pair<std::string_view, double>, 8> Parts() const {
    return {{{"total", total_s},
             {"segmentation_wait", segmentation_wait_s},
             {"segmentation", segmentation_s},
             {"embedding_wait", embedding_wait_s},
             {"embedding", embedding_s},
             {"host_wait", host_wait_s},
             {"clustering", clustering_s},
             {"delivery", delivery_s}}};
  }
};

struct JobResult {
  std::string request_id;
  // Segments (regular and exclusive views), labels, centroids.
  pipeline::DiarizationOutput output;
  // Number of windows that went through the networks.
  int num_windows = 0;
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
  // Most bytes the job held at once (see Job::memory_bytes).
  int64_t peak_memory_bytes = 0;
  // From the end of the audio to this result, by part.
  TailTimes tail;
  // Only with JobOptions::return_intermediates: (C × 589 × 3) binarized
  // segmentations and (C × 3 × 256) embeddings, window-major.
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
  // The provisional clustering's labels and one centroid per label (as
  // DiarizationOutput's), for identification and stable labels.
  std::vector<std::string> labels;
  std::vector<std::vector<float>> centroids;
};

struct JobCallbacks {
  // Required. Exactly once per accepted job (see the completion contract).
  std::function<void(absl::StatusOr<JobResult>)> on_complete;
  // Optional; only with JobOptions::partial_interval_s > 0.
  std::function<void(PartialResult)> on_partial;
};

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
  // resampled alone (audio/crop_edges.h). Empty for 16 kHz audio.
  virtual absl::Status Append(std::span<const float> samples,
                              const CropEdges& crop_edges) = 0;
  absl::Status Append(std::span<const float> samples) {
    return Append(samples, CropEdges{});
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

// The retry hint carried by RESOURCE_EXHAUSTED statuses from the engine:
// an estimate of the seconds until the request would be admitted (the
// backlog excess over its limit / the measured drain rate of the backlog,
// the caller's fair share of it for per-peer limits; at least 1 s). nullopt
// for statuses without it. The server maps it to gRPC (e.g. a
// "retry-after-s" trailing metadata entry or google.rpc.RetryInfo).
std::optional<double> RetryAfter(const absl::Status& status);
// The absl::Status payload URL that holds it (decimal seconds as text).
inline constexpr char kRetryAfterPayloadUrl[] =
    "type.googleapis.com/diarization.RetryAfterSeconds";

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_H_
