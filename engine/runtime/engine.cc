// The engine: the job life cycle (accept, feed, finish, complete, deliver)
// and drain. Each other concern is a class that owns its state:
//   AdmissionLedger (admission_ledger.h)  backlog, peers, bytes, drain rate
//   DeviceWorker    (device_worker.h)     batching and the networks
//   HostTasks       (host_tasks.h)        final and partial clustering
//   DeadlineTimer   (deadline_timer.h)    job deadlines, the gauge tick
// Job data lives in job_state.h.
//
// Locks, in the only orders they nest: JobState::mu → DeviceWorker::mu_,
// JobState::mu → AdmissionLedger::mu_ and Engine mu_ → AdmissionLedger::mu_
// (Accept assigns the device while the engine state cannot change). The
// ledger's, the timer's and the host tasks' mutexes are leaves: nothing is
// acquired while holding them (absl's deadlock detector checks this in debug
// builds). No user callback runs under any of them: callbacks run on the
// job's Strand.
#include "engine/runtime/engine.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/clustering.h"
#include "engine/runtime/admission_ledger.h"
#include "engine/runtime/deadline_timer.h"
#include "engine/runtime/device_worker.h"
#include "engine/runtime/host_tasks.h"
#include "engine/runtime/job_state.h"
#include "engine/runtime/linkage_pool.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime {

std::optional<double> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  double seconds = 0.0;
  if (!absl::SimpleAtod(std::string(*payload), &seconds)) return std::nullopt;
  return seconds;
}

absl::StatusOr<std::unique_ptr<Job>> Engine::Submit(
    const JobOptions& options, std::vector<float>&& samples,
    JobCallbacks callbacks) {
  ASSIGN_OR_RETURN(
      Reservation r,
      Reserve(AdmissionRequest{
          .audio_s = static_cast<double>(samples.size()) / kSampleRateHz,
          .peer = options.peer,
          .principal = options.principal,
          .principal_backlog_share = options.principal_backlog_share}));
  return Submit(options, std::move(samples), std::move(callbacks),
                std::move(r));
}

absl::StatusOr<std::unique_ptr<Job>> Engine::StartJob(const JobOptions& options,
                                                      JobCallbacks callbacks) {
  ASSIGN_OR_RETURN(Reservation r, Reserve(AdmissionRequest{
                                      .audio_s = 0.0,
                                      .peer = options.peer,
                                      .principal = options.principal,
                                      .principal_backlog_share =
                                          options.principal_backlog_share}));
  return StartJob(options, std::move(callbacks), std::move(r));
}

namespace internal {
namespace {

constexpr absl::Duration kMetricsTick = absl::Seconds(1);

double Seconds(int64_t samples) {
  return static_cast<double>(samples) / kSampleRateHz;
}

absl::Status ValidateJobOptions(const JobOptions& options,
                                const JobCallbacks& callbacks) {
  if (!callbacks.on_complete) {
    return absl::InvalidArgumentError("JobCallbacks::on_complete is required");
  }
  if (options.config.step_samples <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PipelineConfig::step_samples must be > 0, got ",
                     options.config.step_samples));
  }
  RETURN_IF_ERROR(pipeline::ResolveHints(options.hints).status());
  if (!(options.partial_interval_s >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partial_interval_s must be >= 0, got ", options.partial_interval_s));
  }
  if (options.deadline <= absl::Now()) {
    return absl::DeadlineExceededError(
        "the job's deadline had already passed when it was submitted");
  }
  return absl::OkStatus();
}

}  // namespace

class EngineImpl : public WorkerListener,
                   public std::enable_shared_from_this<EngineImpl> {
 public:
  EngineImpl(EngineOptions options,
             std::shared_ptr<const pipeline::PldaModel> plda,
             std::shared_ptr<Metrics> metrics)
      : options_(std::move(options)),
        plda_(std::move(plda)),
        metrics_(std::move(metrics)),
        timer_([this](std::shared_ptr<JobState> job) { Expire(job); },
               [this] {
                 for (auto& w : workers_) w->Status();  // memory + rtfx
                 PublishBacklog();  // also after reservations ended
                 metrics_->SetJobMemoryBytes(
                     static_cast<double>(ledger_->total_bytes()));
                 metrics_->SetBacklogDrainRate(ledger_->drain_rate());
               },
               kMetricsTick) {}

  ~EngineImpl() override { Drain(absl::Now()).IgnoreError(); }

  absl::Status Init(std::vector<Device> devices) {
    if (options_.clustering_blas_threads > 0) {
      SetClusteringBlasThreads(options_.clustering_blas_threads);
    }
    if (!options_.cluster_function) {
      // The host pipeline, its linkage on the devices' GPUs where they have
      // one (any of them: the merges are the host's either way).
      std::vector<std::shared_ptr<pipeline::LinkageAccelerator>> linkages;
      for (const Device& d : devices) linkages.push_back(d.linkage);
      auto pool = std::make_shared<LinkagePool>(std::move(linkages));
      options_.cluster_function =
          [plda = plda_, pool = pool->empty() ? nullptr : pool](
              std::span<const float> segmentations,
              std::span<const float> embeddings, int num_windows,
              const pipeline::PipelineConfig& config,
              const pipeline::SpeakerHints& hints) {
            pipeline::AhcOptions ahc;
            ahc.accelerator = pool.get();
            return pipeline::Diarize(segmentations, embeddings, num_windows,
                                     *plda, config, hints, ahc);
          };
    }
    callbacks_pool_ = std::make_unique<ThreadPool>(options_.callback_threads);
    host_ = std::make_unique<HostTasks>(
        options_.host_threads, options_.cluster_function, metrics_.get());
    for (Device& d : devices) {
      workers_.push_back(std::make_unique<DeviceWorker>(std::move(d), options_,
                                                        metrics_.get(), this));
    }
    ledger_ = std::make_shared<AdmissionLedger>(
        options_, static_cast<int>(workers_.size()), [this] {
          double rtfx = 0.0;
          for (auto& w : workers_) rtfx += w->Rtfx();
          return rtfx;
        });
    for (auto& w : workers_) {
      absl::Status s = w->Start();
      if (!s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("starting the worker of device ", w->name(),
                                   ": ", s.message()));
      }
      metrics_->SetActiveJobs(w->name(), 0);
    }
    metrics_->SetActiveStreams(0);
    metrics_->SetBacklogAudioSeconds(0);
    timer_.Start();
    return absl::OkStatus();
  }

  absl::StatusOr<Reservation> Reserve(const AdmissionRequest& request) {
    if (!std::isfinite(request.audio_s) || request.audio_s < 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AdmissionRequest::audio_s must be finite and >= 0, got ",
          request.audio_s));
    }
    RETURN_IF_ERROR(CheckServing());
    // Clamped so that an absurd duration from an untrusted header cannot
    // overflow; anything near the clamp is refused by the share check.
    // The small tolerance keeps a duration computed from a sample count
    // (n / 16000, rounded) at n samples.
    const int64_t samples = std::max<int64_t>(
        0, static_cast<int64_t>(std::ceil(
               std::min(request.audio_s, 1e9) * kSampleRateHz - 1e-6)));
    if (!std::isfinite(request.principal_backlog_share) ||
        request.principal_backlog_share < 0.0 ||
        request.principal_backlog_share > 1.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AdmissionRequest::principal_backlog_share must be in [0, 1], got ",
          request.principal_backlog_share));
    }
    ASSIGN_OR_RETURN(Reservation r,
                     ledger_->Reserve(samples, request.peer, request.principal,
                                      request.principal_backlog_share));
    PublishBacklog();
    return r;
  }

  absl::StatusOr<std::shared_ptr<JobState>> Submit(const JobOptions& options,
                                                   std::vector<float>& samples,
                                                   CropEdges& crop_edges,
                                                   JobCallbacks callbacks,
                                                   Reservation reservation) {
    RETURN_IF_ERROR(ValidateJobOptions(options, callbacks));
    if (samples.empty()) {
      return absl::InvalidArgumentError("Submit: no audio samples");
    }
    if (!reservation.valid()) {
      return absl::InvalidArgumentError(
          "Submit: the reservation is empty (default-constructed or already "
          "used); get one from Engine::Reserve");
    }
    const int64_t n = static_cast<int64_t>(samples.size());
    RETURN_IF_ERROR(ledger_->Resize(reservation.ticket_, n));
    ASSIGN_OR_RETURN(std::shared_ptr<JobState> job,
                     Accept(options, std::move(callbacks), /*streaming=*/false,
                            std::move(reservation)));
    const pipeline::WindowLayout layout =
        pipeline::ComputeWindows(n, job->options.config);
    std::vector<int> windows;
    absl::Status error;
    // Taken in any case (accepted); freed here if the job already ended
    // (a deadline, a drain) before its audio arrived.
    std::vector<float> audio = std::move(samples);
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return job;
      job->audio = std::move(audio);
      job->crop_edges = std::move(crop_edges);
      job->num_samples = n;
      job->finished = true;
      job->finish_time = job->accepted_time;
      error = AddWindowsLocked(*job, layout.num_windows, &windows);
      if (error.ok()) {
        job->num_windows = layout.num_windows;
        workers_[job->device]->EnqueueSegmentation(job, windows);
      }
      UpdateBytesLocked(*job);
    }
    if (!error.ok()) Complete(job, error);
    return job;
  }

  absl::StatusOr<std::shared_ptr<JobState>> StartJob(const JobOptions& options,
                                                     JobCallbacks callbacks,
                                                     Reservation reservation) {
    RETURN_IF_ERROR(ValidateJobOptions(options, callbacks));
    if (!reservation.valid()) {
      return absl::InvalidArgumentError(
          "StartJob: the reservation is empty (default-constructed or already "
          "used); get one from Engine::Reserve");
    }
    // A stream's audio is counted as it arrives.
    RETURN_IF_ERROR(ledger_->Resize(reservation.ticket_, 0));
    return Accept(options, std::move(callbacks), /*streaming=*/true,
                  std::move(reservation));
  }

  absl::Status Append(const std::shared_ptr<JobState>& job,
                      std::span<const float> samples,
                      const CropEdges& crop_edges) {
    absl::Status error;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return TerminalStatusLocked(*job);
      if (job->finished) {
        return absl::FailedPreconditionError(
            "Append after the end of the job's audio (Finish, or a job from "
            "Submit)");
      }
      // The edges first: the windows these samples complete need them.
      if (!crop_edges.empty()) {
        job->crop_edges.Append(crop_edges);
        UpdateBytesLocked(*job);
      }
      if (samples.empty()) return absl::OkStatus();
      const int64_t n = static_cast<int64_t>(samples.size());
      ledger_->Add(job->ticket, n);
      job->audio.insert(job->audio.end(), samples.begin(), samples.end());
      job->num_samples += n;
      std::vector<int> windows;
      const int full =
          FullWindows(job->num_samples, job->options.config.step_samples);
      error = AddWindowsLocked(*job, full, &windows);
      if (error.ok()) workers_[job->device]->EnqueueSegmentation(job, windows);
      UpdateBytesLocked(*job);
    }
    PublishBacklog();
    if (!error.ok()) {
      Complete(job, error);
      return error;
    }
    return absl::OkStatus();
  }

  absl::Status Finish(const std::shared_ptr<JobState>& job) {
    absl::Status error;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return TerminalStatusLocked(*job);
      if (job->finished) {
        return absl::FailedPreconditionError(
            "Finish called twice (or on a job from Submit, whose audio ended "
            "at Submit)");
      }
      job->finished = true;
      job->finish_time = absl::Now();
      if (job->num_samples == 0) {
        error = absl::InvalidArgumentError(
            "the stream ended without any audio samples");
      } else {
        const pipeline::WindowLayout layout =
            pipeline::ComputeWindows(job->num_samples, job->options.config);
        std::vector<int> windows;
        error = AddWindowsLocked(*job, layout.num_windows, &windows);
        if (error.ok()) {
          job->num_windows = layout.num_windows;
          workers_[job->device]->EnqueueSegmentation(job, windows);
          UpdateBytesLocked(*job);
          MaybeStartClusteringLocked(job);
        }
      }
    }
    if (!error.ok()) {
      Complete(job, error);
      return error;
    }
    return absl::OkStatus();
  }

  void Cancel(const std::shared_ptr<JobState>& job) {
    Complete(job, absl::CancelledError("job cancelled by the caller"));
  }

  double JobBacklog(const JobState& job) const {
    return Seconds(ledger_->backlog_samples(job.ticket));
  }

  void NotifyWhenBacklogAtMost(const std::shared_ptr<JobState>& job,
                               double seconds, std::function<void()> resume) {
    if (!resume) return;
    // NaN counts as 0; +inf as "any backlog".
    if (std::isnan(seconds)) seconds = 0.0;
    const int64_t at = static_cast<int64_t>(
        std::floor(std::clamp(seconds, 0.0, 1e9) * kSampleRateHz));
    absl::MutexLock lock(&job->mu);
    if (job->delivering) {
      job->strand.Post(std::move(resume));
      return;
    }
    job->resume = nullptr;  // a later call replaces a pending one
    if (!job->terminal.load() && ledger_->backlog_samples(job->ticket) > at) {
      job->resume = std::move(resume);
      job->resume_at_samples = at;
      return;
    }
    // Terminal (not yet delivered): the delivery calls it before
    // on_complete; under the threshold: now.
    if (job->terminal.load()) {
      job->resume = std::move(resume);
    } else {
      job->strand.Post(std::move(resume));
    }
  }

  int64_t JobBytes(JobState& job) const {
    absl::MutexLock lock(&job.mu);
    return job.terminal.load() ? 0 : job.HeldBytesLocked();
  }

  const std::string& DeviceName(int device) const {
    return workers_[device]->name();
  }

  // --- WorkerListener ---
  void OnWindowDone(const std::shared_ptr<JobState>& job, int window,
                    const WindowTimes& times) override {
    bool released = false;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return;
      if (job->window_done[window]) return;
      job->window_done[window] = 1;
      job->last_window = times;
      ++job->windows_done;
      const int total = static_cast<int>(job->window_done.size());
      while (job->contiguous_done < total &&
             job->window_done[job->contiguous_done]) {
        ++job->contiguous_done;
      }
      const int64_t step = job->options.config.step_samples;
      int64_t processed = 0;
      if (job->contiguous_done > 0) {
        processed = std::min<int64_t>(
            job->num_samples,
            step * (job->contiguous_done - 1) + kWindowSamples);
      }
      if (job->finished && job->windows_done == job->num_windows) {
        processed = job->num_samples;
      }
      if (processed > job->processed_samples) {
        const int64_t left =
            ledger_->Release(job->ticket, processed - job->processed_samples);
        job->processed_samples = processed;
        released = true;
        if (job->resume && left <= job->resume_at_samples) {
          job->strand.Post(std::move(job->resume));
          job->resume = nullptr;
        }
      }
      TrimAudioLocked(*job);
      UpdateBytesLocked(*job);
      MaybeStartClusteringLocked(job);
      MaybeStartPartialLocked(job);
    }
    if (released) PublishBacklog();
  }

  void OnJobFailed(const std::shared_ptr<JobState>& job,
                   absl::Status status) override {
    Complete(job, std::move(status));
  }

  // --- engine-wide ---
  absl::Status Drain(absl::Time deadline) {
    absl::MutexLock drain_lock(&drain_mu_);
    if (drained_) return absl::OkStatus();
    std::vector<std::shared_ptr<JobState>> leftovers;
    bool in_time = false;
    {
      absl::MutexLock lock(&mu_);
      if (state_ == EngineState::kServing) state_ = EngineState::kDraining;
      in_time = mu_.AwaitWithDeadline(
          absl::Condition(
              +[](int* active) { return *active == 0; }, &active_jobs_),
          deadline);
      if (!in_time) {
        for (auto& [id, job] : live_) leftovers.push_back(job);
      }
    }
    for (auto& job : leftovers) {
      Complete(job, absl::UnavailableError(
                        "the engine is shutting down and its drain deadline "
                        "passed before this job finished"));
    }
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](int* active) { return *active == 0; }, &active_jobs_));
      state_ = EngineState::kStopped;
    }
    for (auto& w : workers_) w->Stop();
    timer_.Stop();
    if (host_) host_->Shutdown();
    if (callbacks_pool_) callbacks_pool_->Shutdown();
    drained_ = true;
    if (!in_time) {
      return absl::DeadlineExceededError(
          absl::StrCat("drain deadline passed with ", leftovers.size(),
                       " job(s) unfinished; they completed with UNAVAILABLE"));
    }
    return absl::OkStatus();
  }

  EngineState state() const {
    absl::MutexLock lock(&mu_);
    return state_;
  }

  std::vector<DeviceStatus> Devices() const {
    std::vector<DeviceStatus> out;
    for (const auto& w : workers_) out.push_back(w->Status());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].active_jobs = ledger_->device_jobs(static_cast<int>(i));
      out[i].backlog_audio_s =
          Seconds(ledger_->device_backlog_samples(static_cast<int>(i)));
    }
    return out;
  }

  double backlog_audio_s() const {
    return Seconds(ledger_->total_backlog_samples());
  }

  int active_jobs() const {
    absl::MutexLock lock(&mu_);
    return active_jobs_;
  }

  int64_t job_memory_bytes() const { return ledger_->total_bytes(); }
  double drain_rate() const { return ledger_->drain_rate(); }

  const EngineOptions& options() const { return options_; }
  Metrics& metrics() { return *metrics_; }

 private:
  absl::Status CheckServing() const {
    absl::MutexLock lock(&mu_);
    if (state_ != EngineState::kServing) {
      return absl::UnavailableError(
          "the engine is draining and accepts no new jobs; retry on another "
          "replica");
    }
    return absl::OkStatus();
  }

  // Turns an admitted reservation into a live job on a device.
  absl::StatusOr<std::shared_ptr<JobState>> Accept(const JobOptions& options,
                                                   JobCallbacks callbacks,
                                                   bool streaming,
                                                   Reservation reservation) {
    std::shared_ptr<JobState> job;
    {
      absl::MutexLock lock(&mu_);
      if (state_ != EngineState::kServing) {
        return absl::UnavailableError(
            "the engine is draining and accepts no new jobs; retry on another "
            "replica");
      }
      const uint64_t ticket = reservation.Consume();
      const int device = ledger_->Assign(ticket);
      JobOptions job_options = options;
      job_options.peer = reservation.peer();
      job = std::make_shared<JobState>(next_id_++, std::move(job_options),
                                       std::move(callbacks), streaming, device,
                                       ticket, callbacks_pool_.get());
      ++active_jobs_;
      if (streaming) ++active_streams_;
      live_[job->id] = job;
    }
    PublishBacklog();
    PublishJobs(job->device);
    if (options.deadline != absl::InfiniteFuture()) {
      timer_.Add(options.deadline, job);
    }
    return job;
  }

  absl::Status TerminalStatusLocked(const JobState& job) {
    if (!job.final_status.ok()) return job.final_status;
    return absl::FailedPreconditionError("the job has already completed");
  }

  // Grows the job's window list to `count` windows; returns the new ones.
  absl::Status AddWindowsLocked(JobState& job, int count,
                                std::vector<int>* added) {
    const int have = static_cast<int>(job.windows.size());
    if (count < have) {
      return absl::InternalError(
          absl::StrCat("window layout shrank from ", have, " to ", count,
                       " windows for ", job.num_samples, " samples"));
    }
    for (int c = have; c < count; ++c) {
      job.windows.push_back(std::make_unique<WindowData>());
      job.window_done.push_back(0);
      added->push_back(c);
    }
    return absl::OkStatus();
  }

  // Drops audio that no pending window needs (windows before contiguous_done
  // are done) and gives its memory back. Only when the dropped part is at
  // least a window and at least what stays, so the copies of a long
  // recording add up to O(its length) while a live stream keeps only a few
  // windows of audio.
  void TrimAudioLocked(JobState& job) {
    const int64_t keep_from =
        job.options.config.step_samples * job.contiguous_done;
    const int64_t drop =
        std::min(keep_from, job.num_samples) - job.audio_offset;
    const int64_t stays = job.num_samples - job.audio_offset - drop;
    if (drop >= kWindowSamples && drop >= stays) {
      // A fresh vector: erase() would keep the whole capacity.
      std::vector<float> rest;
      rest.reserve(static_cast<size_t>(stays) + (job.finished ? 0 : stays));
      rest.assign(job.audio.begin() + drop, job.audio.end());
      job.audio = std::move(rest);
      job.audio_offset += drop;
    }
  }

  void UpdateBytesLocked(JobState& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu) {
    const int64_t bytes = job.HeldBytesLocked();
    job.peak_bytes = std::max(job.peak_bytes, bytes);
    ledger_->SetBytes(job.ticket, bytes);
  }

  void MaybeStartPartialLocked(const std::shared_ptr<JobState>& job) {
    if (!job->streaming || job->options.partial_interval_s <= 0.0 ||
        !job->callbacks.on_partial || job->partial_in_flight ||
        job->clustering_scheduled || job->contiguous_done == 0) {
      return;
    }
    const double processed_s = Seconds(job->processed_samples);
    if (processed_s < job->next_partial_s) return;
    job->partial_in_flight = true;
    job->next_partial_s = processed_s + job->options.partial_interval_s;
    const int k = job->contiguous_done;
    host_->Cluster(
        HostTasks::Kind::kPartial, k,
        [this, job, k]() -> std::optional<ClusterInput> {
          absl::MutexLock lock(&job->mu);
          // Once the final clustering is scheduled (it may already have
          // taken the windows' outputs) a provisional one has no point.
          if (job->terminal.load() || job->clustering_scheduled) {
            job->partial_in_flight = false;
            return std::nullopt;
          }
          ClusterInput input = GatherLocked(*job, k);
          job->cluster_bytes += input.bytes();
          UpdateBytesLocked(*job);
          return input;
        },
        [this, job](ClusterOutcome out) {
          OnPartialClustered(job, std::move(out));
        });
  }

  void OnPartialClustered(const std::shared_ptr<JobState>& job,
                          ClusterOutcome out) {
    PartialResult partial;
    {
      absl::MutexLock lock(&job->mu);
      job->partial_in_flight = false;
      job->cluster_bytes -= out.input.bytes();
      if (job->terminal.load()) return;
      UpdateBytesLocked(*job);
      const int k = out.input.num_windows;
      partial.request_id = job->options.request_id;
      partial.audio_received_s = Seconds(job->num_samples);
      partial.audio_processed_s = Seconds(std::min<int64_t>(
          job->num_samples,
          job->options.config.step_samples * (k - 1) + kWindowSamples));
    }
    if (!out.output.ok()) {
      // Provisional only: the final clustering reports real errors.
      ReportDiagnostic(
          "engine",
          absl::StrCat("partial clustering of job ", job->options.request_id,
                       " failed: ", out.output.status().message()));
      return;
    }
    partial.segments = std::move(out.output->segments);
    partial.exclusive_segments = std::move(out.output->exclusive_segments);
    partial.labels = std::move(out.output->labels);
    partial.centroids = std::move(out.output->centroids);
    // The strand orders it before a completion posted later; one posted
    // earlier has set `delivering`, and the partial is dropped.
    job->strand.Post([job, partial = std::move(partial)]() mutable {
      {
        absl::MutexLock lock(&job->mu);
        if (job->delivering) return;
      }
      job->callbacks.on_partial(std::move(partial));
    });
  }

  void MaybeStartClusteringLocked(const std::shared_ptr<JobState>& job) {
    if (!job->finished || job->clustering_scheduled || job->num_windows < 0 ||
        job->windows_done != job->num_windows) {
      return;
    }
    job->clustering_scheduled = true;
    job->windows_done_time = absl::Now();
    TailNetworkPartsLocked(*job);
    const HostLoad load = host_->Cluster(
        HostTasks::Kind::kFinal, job->num_windows,
        [this, job]() -> std::optional<ClusterInput> {
          absl::MutexLock lock(&job->mu);
          if (job->terminal.load()) return std::nullopt;
          job->clustering_start_time = absl::Now();
          ClusterInput input = GatherLocked(*job, job->num_windows);
          // The outputs are in `input` now (every window is done, so no
          // batch refers to them); the windows and audio are not needed.
          job->windows.clear();
          job->windows.shrink_to_fit();
          job->window_done.clear();
          job->window_done.shrink_to_fit();
          job->audio.clear();
          job->audio.shrink_to_fit();
          job->crop_edges = CropEdges{};
          job->cluster_bytes += input.bytes();
          UpdateBytesLocked(*job);
          return input;
        },
        [this, job](ClusterOutcome out) { OnClustered(job, std::move(out)); });
    job->tail.finals_running = load.finals_running;
    job->tail.partials_running = load.partials_running;
    job->tail.finals_queued = load.finals_queued;
  }

  // The network parts of the job's TailTimes: the last window's way from
  // the end of the audio to its embeddings (each moment before the end of
  // the audio counts as the end).
  static void TailNetworkPartsLocked(JobState& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu) {
    const WindowTimes& w = job.last_window;
    absl::Time t = job.finish_time;
    auto part = [&t](absl::Time until) {
      if (until <= t) return 0.0;
      const double s = absl::ToDoubleSeconds(until - t);
      t = until;
      return s;
    };
    job.tail.segmentation_wait_s = part(w.segmentation_start);
    job.tail.segmentation_s = part(w.segmentation_end);
    job.tail.embedding_wait_s = part(w.embedding_start);
    job.tail.embedding_s = part(w.embedding_end);
  }

  void OnClustered(const std::shared_ptr<JobState>& job, ClusterOutcome out) {
    if (!out.output.ok()) {
      Complete(job, out.output.status());
      return;
    }
    JobResult result;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return;
      result.request_id = job->options.request_id;
      result.num_windows = job->num_windows;
      result.audio_s = Seconds(job->num_samples);
      result.device = DeviceName(job->device);
      result.first_window_wait_s = job->first_window_wait_s;
      result.processing_s = job->device_seconds_before_finish +
                            absl::ToDoubleSeconds(out.end - job->finish_time);
      result.peak_memory_bytes = job->peak_bytes;
      job->clustering_end_time = out.end;
      TailTimes& tail = job->tail;
      const absl::Time embedded =
          std::max(job->finish_time, job->last_window.embedding_end);
      tail.host_wait_s = std::max(
          0.0, absl::ToDoubleSeconds(job->clustering_start_time - embedded));
      tail.clustering_s = std::max(
          0.0, absl::ToDoubleSeconds(out.end - job->clustering_start_time));
      result.tail = tail;
    }
    result.output = *std::move(out.output);
    result.rtfx =
        result.processing_s > 0.0 ? result.audio_s / result.processing_s : 0.0;
    if (job->options.return_intermediates) {
      result.segmentations = std::move(out.input.segmentations);
      result.embeddings = std::move(out.input.embeddings);
    }
    Complete(job, std::move(result));
  }

  void Expire(const std::shared_ptr<JobState>& job) {
    int done = 0, total = 0;
    {
      absl::MutexLock lock(&job->mu);
      done = job->windows_done;
      total = static_cast<int>(job->window_done.size());
    }
    Complete(job, absl::DeadlineExceededError(absl::StrCat(
                      "job deadline passed with ", done, " of ", total,
                      " scheduled windows through the networks")));
  }

  // The one place a job ends. Returns false when it had already ended.
  bool Complete(const std::shared_ptr<JobState>& job,
                absl::StatusOr<JobResult> result) {
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.exchange(true)) return false;
      job->final_status = result.status();
      job->audio.clear();
      job->audio.shrink_to_fit();
      job->crop_edges = CropEdges{};
      // (The windows' outputs stay: a batch in flight may still write them.)
      // The backlog, bytes, peer call and device job go back at once.
      ledger_->Close(job->ticket);
    }
    workers_[job->device]->DropJob(job->id);
    PublishBacklog();
    PublishJobs(job->device);
    auto shared =
        std::make_shared<absl::StatusOr<JobResult>>(std::move(result));
    job->strand.Post([this, job, shared] { Deliver(job, std::move(*shared)); });
    return true;
  }

  void Deliver(const std::shared_ptr<JobState>& job,
               absl::StatusOr<JobResult> result) {
    std::function<void()> resume;
    int64_t peak = 0;
    {
      absl::MutexLock lock(&job->mu);
      job->delivering = true;
      resume = std::move(job->resume);
      job->resume = nullptr;
      peak = job->peak_bytes;
      if (result.ok()) {
        TailTimes& tail = result->tail;
        tail.delivery_s = std::max(
            0.0, absl::ToDoubleSeconds(absl::Now() - job->clustering_end_time));
        tail.total_s = tail.segmentation_wait_s + tail.segmentation_s +
                       tail.embedding_wait_s + tail.embedding_s +
                       tail.host_wait_s + tail.clustering_s + tail.delivery_s;
      }
    }
    if (resume) resume();
    const absl::StatusCode code = result.status().code();
    if (result.ok()) {
      metrics_->AddAudioSeconds(result->device, result->audio_s);
      if (result->rtfx > 0.0) metrics_->ObserveRequestRtfx(result->rtfx);
      for (const auto& [part, seconds] : result->tail.Parts()) {
        metrics_->ObserveTailSeconds(part, seconds);
      }
    }
    metrics_->RecordJobCompleted(code);
    job->callbacks.on_complete(std::move(result));
    if (options_.trim_after_job_bytes > 0 &&
        peak >= options_.trim_after_job_bytes) {
      // Give the freed heap of a large job back to the OS.
      host_->Maintain([] { malloc_trim(0); });
    }
    {
      absl::MutexLock lock(&mu_);
      --active_jobs_;
      if (job->streaming) --active_streams_;
      live_.erase(job->id);
    }
    PublishJobs(job->device);
  }

  void PublishBacklog() { metrics_->SetBacklogAudioSeconds(backlog_audio_s()); }

  void PublishJobs(int device) {
    int streams;
    {
      absl::MutexLock lock(&mu_);
      streams = active_streams_;
    }
    metrics_->SetActiveJobs(workers_[device]->name(),
                            ledger_->device_jobs(device));
    metrics_->SetActiveStreams(streams);
  }

  EngineOptions options_;
  const std::shared_ptr<const pipeline::PldaModel> plda_;
  const std::shared_ptr<Metrics> metrics_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
  std::shared_ptr<AdmissionLedger> ledger_;
  std::unique_ptr<HostTasks> host_;
  std::unique_ptr<ThreadPool> callbacks_pool_;
  DeadlineTimer timer_;

  mutable absl::Mutex mu_;
  EngineState state_ ABSL_GUARDED_BY(mu_) = EngineState::kServing;
  int active_jobs_ ABSL_GUARDED_BY(mu_) = 0;
  int active_streams_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::shared_ptr<JobState>> live_ ABSL_GUARDED_BY(mu_);

  absl::Mutex drain_mu_;
  bool drained_ ABSL_GUARDED_BY(drain_mu_) = false;
};

namespace {

class JobHandle : public Job {
 public:
  JobHandle(std::shared_ptr<EngineImpl> engine, std::shared_ptr<JobState> job,
            bool finished)
      : engine_(std::move(engine)),
        job_(std::move(job)),
        device_(engine_->DeviceName(job_->device)),
        finished_(finished) {}

  ~JobHandle() override {
    if (!finished_.load()) engine_->Cancel(job_);
  }

  using Job::Append;
  absl::Status Append(std::span<const float> samples,
                      const CropEdges& crop_edges) override {
    return engine_->Append(job_, samples, crop_edges);
  }

  absl::Status Finish() override {
    absl::Status s = engine_->Finish(job_);
    // Whatever Finish returned, the job no longer needs this handle: it
    // either runs to completion or has completed.
    finished_.store(true);
    return s;
  }

  void Cancel() override { engine_->Cancel(job_); }

  const std::string& device() const override { return device_; }

  double audio_received_s() const override {
    absl::MutexLock lock(&job_->mu);
    return Seconds(job_->num_samples);
  }

  double backlog_audio_s() const override { return engine_->JobBacklog(*job_); }

  void NotifyWhenBacklogAtMost(double seconds,
                               std::function<void()> resume) override {
    engine_->NotifyWhenBacklogAtMost(job_, seconds, std::move(resume));
  }

  int64_t memory_bytes() const override { return engine_->JobBytes(*job_); }

 private:
  std::shared_ptr<EngineImpl> engine_;
  std::shared_ptr<JobState> job_;
  const std::string device_;
  std::atomic<bool> finished_;
};

class EngineFacade : public Engine {
 public:
  explicit EngineFacade(std::shared_ptr<EngineImpl> impl)
      : impl_(std::move(impl)) {}
  ~EngineFacade() override { impl_->Drain(absl::Now()).IgnoreError(); }

  using Engine::StartJob;
  using Engine::Submit;

  absl::StatusOr<Reservation> Reserve(
      const AdmissionRequest& request) override {
    return impl_->Reserve(request);
  }
  absl::StatusOr<std::unique_ptr<Job>> Submit(
      const JobOptions& options, std::vector<float>&& samples,
      CropEdges&& crop_edges, JobCallbacks callbacks,
      Reservation reservation) override {
    ASSIGN_OR_RETURN(
        std::shared_ptr<JobState> job,
        impl_->Submit(options, samples, crop_edges, std::move(callbacks),
                      std::move(reservation)));
    return std::unique_ptr<Job>(
        new JobHandle(impl_, std::move(job), /*finished=*/true));
  }
  absl::StatusOr<std::unique_ptr<Job>> StartJob(
      const JobOptions& options, JobCallbacks callbacks,
      Reservation reservation) override {
    ASSIGN_OR_RETURN(
        std::shared_ptr<JobState> job,
        impl_->StartJob(options, std::move(callbacks), std::move(reservation)));
    return std::unique_ptr<Job>(
        new JobHandle(impl_, std::move(job), /*finished=*/false));
  }
  absl::Status Drain(absl::Time deadline) override {
    return impl_->Drain(deadline);
  }
  EngineState state() const override { return impl_->state(); }
  std::vector<DeviceStatus> Devices() const override {
    return impl_->Devices();
  }
  double backlog_audio_s() const override { return impl_->backlog_audio_s(); }
  int active_jobs() const override { return impl_->active_jobs(); }
  int64_t job_memory_bytes() const override {
    return impl_->job_memory_bytes();
  }
  double drain_rate() const override { return impl_->drain_rate(); }
  const EngineOptions& options() const override { return impl_->options(); }
  Metrics& metrics() override { return impl_->metrics(); }

 private:
  std::shared_ptr<EngineImpl> impl_;
};

}  // namespace
}  // namespace internal

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(
    EngineOptions options, std::vector<Device> devices,
    std::shared_ptr<const pipeline::PldaModel> plda,
    std::shared_ptr<Metrics> metrics) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("Engine::Create: no devices");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    const Device& d = devices[i];
    if (d.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Engine::Create: device ", i, " has no name"));
    }
    if (d.segmentation == nullptr || d.embedding == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Engine::Create: device ", d.name,
                       " lacks a segmentation or an "
                       "embedding model"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (devices[j].name == d.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("Engine::Create: two devices are named ", d.name));
      }
    }
  }
  if (options.segmentation_batch_size < 1 || options.embedding_batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: batch sizes must be >= 1, got segmentation ",
        options.segmentation_batch_size, ", embedding ",
        options.embedding_batch_size));
  }
  if (options.max_batch_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "Engine::Create: max_batch_wait must be >= 0");
  }
  if (!(options.max_backlog_audio_s > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Engine::Create: max_backlog_audio_s must be > 0, got ",
                     options.max_backlog_audio_s));
  }
  if (!(options.max_request_backlog_share > 0.0 &&
        options.max_request_backlog_share <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: max_request_backlog_share must be in (0, 1], got ",
        options.max_request_backlog_share));
  }
  if (options.max_calls_per_peer < 0 ||
      !(options.max_peer_backlog_audio_s >= 0.0) ||
      options.max_job_memory_bytes < 0 || options.max_process_rss_bytes < 0 ||
      options.trim_after_job_bytes < 0) {
    return absl::InvalidArgumentError(
        "Engine::Create: max_calls_per_peer, max_peer_backlog_audio_s, "
        "max_job_memory_bytes, max_process_rss_bytes and trim_after_job_bytes "
        "must be >= 0 (0 = none)");
  }
  if (options.clustering_blas_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: clustering_blas_threads must be >= 0 (0 = the "
        "library's own setting), got ",
        options.clustering_blas_threads));
  }
  if (options.host_threads < 1 || options.callback_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: host_threads and callback_threads must be >= 1, got ",
        options.host_threads, " and ", options.callback_threads));
  }
  if (plda == nullptr && !options.cluster_function) {
    return absl::InvalidArgumentError(
        "Engine::Create: a PLDA model is required (or a cluster_function)");
  }
  if (metrics == nullptr) {
    ASSIGN_OR_RETURN(metrics,
                     Metrics::Create(std::make_shared<prometheus::Registry>(),
                                     BuildInfo{"unknown", "unknown"}));
  }
  auto impl = std::make_shared<internal::EngineImpl>(
      std::move(options), std::move(plda), std::move(metrics));
  absl::Status s = impl->Init(std::move(devices));
  if (!s.ok()) {
    impl->Drain(absl::Now()).IgnoreError();
    return s;
  }
  return std::unique_ptr<Engine>(new internal::EngineFacade(std::move(impl)));
}

}  // namespace diarization::runtime
