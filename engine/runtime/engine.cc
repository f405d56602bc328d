// The engine's life cycle: EngineImpl (engine_impl.h, which maps the other
// concerns). The handles the caller holds are in engine_facade.cc.
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/clustering.h"
#include "engine/runtime/engine_impl.h"
#include "engine/runtime/linkage_pool.h"

namespace diarization::runtime {

namespace internal {
namespace {

constexpr absl::Duration kMetricsTick = absl::Seconds(1);

double Seconds(int64_t samples) {
  return static_cast<double>(samples) / kSampleRateHz;
}

}  // namespace

EngineImpl::EngineImpl(EngineOptions options,
                       std::shared_ptr<const pipeline::PldaModel> plda,
                       std::shared_ptr<Metrics> metrics)
    : options_(std::move(options)),
      plda_(std::move(plda)),
      metrics_(std::move(metrics)),
      timer_([this](std::shared_ptr<JobState> job) { Expire(job); },
             [this] {
               for (auto& w : workers_) w->Status();  // memory + rtfx
               metrics_->SetJobMemoryBytes(
                   static_cast<double>(ledger_->total_bytes()));
               metrics_->SetBacklogDrainRate(ledger_->drain_rate());
             },
             kMetricsTick) {}

EngineImpl::~EngineImpl() { Drain(absl::Now()).IgnoreError(); }

absl::Status EngineImpl::Init(std::vector<Device> devices) {
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
  partials_ = std::make_unique<PartialResults>(host_.get());
  for (Device& d : devices) {
    workers_.push_back(std::make_unique<DeviceWorker>(std::move(d), options_,
                                                      metrics_.get(), this));
  }
  // (The ledger sets the backlog gauge from here on, starting at 0.)
  ledger_ = std::make_shared<AdmissionLedger>(
      options_, static_cast<int>(workers_.size()),
      [this] {
        double rtfx = 0.0;
        for (auto& w : workers_) rtfx += w->Rtfx();
        return rtfx;
      },
      metrics_);
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
  timer_.Start();
  return absl::OkStatus();
}

// ------------------------------------------------------------- intake --

absl::StatusOr<Reservation> EngineImpl::Reserve(
    const AdmissionRequest& request) {
  if (!std::isfinite(request.audio_s) || request.audio_s < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AdmissionRequest::audio_s must be finite and >= 0, got ",
                     request.audio_s));
  }
  RETURN_IF_ERROR(CheckServing());
  // Clamped so that an absurd duration from an untrusted header cannot
  // overflow; anything near the clamp is refused by the share check.
  // The small tolerance keeps a duration computed from a sample count
  // (n / 16000, rounded) at n samples.
  const int64_t samples = std::max<int64_t>(
      0, static_cast<int64_t>(
             std::ceil(std::min(request.audio_s, 1e9) * kSampleRateHz - 1e-6)));
  if (!std::isfinite(request.principal_backlog_share) ||
      request.principal_backlog_share < 0.0 ||
      request.principal_backlog_share > 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AdmissionRequest::principal_backlog_share must be in [0, 1], got ",
        request.principal_backlog_share));
  }
  return ledger_->Reserve(samples, request.peer, request.principal,
                          request.principal_backlog_share);
}

absl::StatusOr<std::shared_ptr<JobState>> EngineImpl::Submit(
    const JobOptions& options, std::vector<float>& samples,
    CropEdges& crop_edges, JobCallbacks callbacks, Reservation reservation) {
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
  std::vector<int> windows;
  absl::Status error;
  // Taken in any case (accepted); freed here if the job already ended
  // (a deadline, a drain) before its audio arrived.
  std::vector<float> audio = std::move(samples);
  {
    absl::MutexLock lock(&job->mu());
    if (job->terminal()) return job;
    error = job->TakeRecordingLocked(std::move(audio), std::move(crop_edges),
                                     &windows);
    if (error.ok()) workers_[job->device()]->EnqueueSegmentation(job, windows);
  }
  if (!error.ok()) Complete(job, error);
  return job;
}

absl::StatusOr<std::shared_ptr<JobState>> EngineImpl::StartJob(
    const JobOptions& options, JobCallbacks callbacks,
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

absl::Status EngineImpl::Append(const std::shared_ptr<JobState>& job,
                                std::span<const float> samples,
                                const CropEdges& crop_edges,
                                std::vector<float>* owned) {
  absl::Status error;
  {
    absl::MutexLock lock(&job->mu());
    if (job->terminal()) return job->TerminalStatusLocked();
    if (job->finished_locked()) {
      return absl::FailedPreconditionError(
          "Append after the end of the job's audio (Finish, or a job from "
          "Submit)");
    }
    // The edges first: the windows these samples complete need them.
    job->AppendCropEdgesLocked(crop_edges);
    if (samples.empty()) return absl::OkStatus();
    std::vector<int> windows;
    error = owned != nullptr ? job->AppendLocked(std::move(*owned), &windows)
                             : job->AppendLocked(samples, &windows);
    if (error.ok()) workers_[job->device()]->EnqueueSegmentation(job, windows);
  }
  if (!error.ok()) {
    Complete(job, error);
    return error;
  }
  return absl::OkStatus();
}

absl::Status EngineImpl::Finish(const std::shared_ptr<JobState>& job) {
  absl::Status error;
  {
    absl::MutexLock lock(&job->mu());
    if (job->terminal()) return job->TerminalStatusLocked();
    if (job->finished_locked()) {
      return absl::FailedPreconditionError(
          "Finish called twice (or on a job from Submit, whose audio ended "
          "at Submit)");
    }
    std::vector<int> windows;
    error = job->FinishLocked(absl::Now(), &windows);
    if (error.ok()) {
      workers_[job->device()]->EnqueueSegmentation(job, windows);
      MaybeStartClusteringLocked(job);
    }
  }
  if (!error.ok()) {
    Complete(job, error);
    return error;
  }
  return absl::OkStatus();
}

void EngineImpl::Cancel(const std::shared_ptr<JobState>& job) {
  Complete(job, absl::CancelledError("job cancelled by the caller"));
}

void EngineImpl::NotifyWhenBacklogAtMost(const std::shared_ptr<JobState>& job,
                                         double seconds,
                                         std::function<void()> resume) {
  if (!resume) return;
  // NaN counts as 0; +inf as "any backlog".
  if (std::isnan(seconds)) seconds = 0.0;
  job->NotifyWhenBacklogAtMost(
      static_cast<int64_t>(
          std::floor(std::clamp(seconds, 0.0, 1e9) * kSampleRateHz)),
      std::move(resume));
}

const std::string& EngineImpl::DeviceName(int device) const {
  return workers_[device]->name();
}

absl::Status EngineImpl::CheckServing() const {
  absl::MutexLock lock(&mu_);
  if (state_ != EngineState::kServing) {
    return absl::UnavailableError(
        "the engine is draining and accepts no new jobs; retry on another "
        "replica");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<JobState>> EngineImpl::Accept(
    const JobOptions& options, JobCallbacks callbacks, bool streaming,
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
                                     ticket, callbacks_pool_.get(), ledger_);
    ++active_jobs_;
    if (streaming) ++active_streams_;
    live_[job->id()] = job;
  }
  PublishJobs(job->device());
  if (options.deadline != absl::InfiniteFuture()) {
    timer_.Add(options.deadline, job);
  }
  return job;
}

// ------------------------------------------------------------ progress --

void EngineImpl::OnWindowDone(const std::shared_ptr<JobState>& job, int window,
                              const WindowTimes& times) {
  absl::MutexLock lock(&job->mu());
  if (job->terminal()) return;
  if (!job->WindowDoneLocked(window, times)) return;
  MaybeStartClusteringLocked(job);
  partials_->MaybeStartLocked(job);
}

void EngineImpl::OnJobFailed(const std::shared_ptr<JobState>& job,
                             absl::Status status) {
  Complete(job, std::move(status));
}

void EngineImpl::MaybeStartClusteringLocked(
    const std::shared_ptr<JobState>& job) {
  if (!job->ScheduleFinalClusteringLocked(absl::Now())) return;
  const HostLoad load = host_->Cluster(
      HostTasks::Kind::kFinal, job->num_windows_locked(),
      [job]() -> std::optional<ClusterInput> {
        absl::MutexLock lock(&job->mu());
        if (job->terminal()) return std::nullopt;
        return job->TakeFinalInputLocked(absl::Now());
      },
      [this, job](ClusterOutcome out) { OnClustered(job, std::move(out)); });
  job->NoteHostLoadLocked(load.finals_running, load.partials_running,
                          load.finals_queued);
}

void EngineImpl::OnClustered(const std::shared_ptr<JobState>& job,
                             ClusterOutcome out) {
  if (!out.output.ok()) {
    Complete(job, out.output.status());
    return;
  }
  JobResult result;
  {
    absl::MutexLock lock(&job->mu());
    if (job->terminal()) return;
    result = job->FinalResultLocked(out.end);
  }
  result.device = DeviceName(job->device());
  result.output = *std::move(out.output);
  result.rtfx =
      result.processing_s > 0.0 ? result.audio_s / result.processing_s : 0.0;
  if (job->options().return_intermediates) {
    result.segmentations = std::move(out.input.segmentations);
    result.embeddings = std::move(out.input.embeddings);
  }
  Complete(job, std::move(result));
}

void EngineImpl::Expire(const std::shared_ptr<JobState>& job) {
  int done = 0, total = 0;
  {
    absl::MutexLock lock(&job->mu());
    done = job->windows_done_locked();
    total = job->windows_scheduled_locked();
  }
  Complete(job, absl::DeadlineExceededError(absl::StrCat(
                    "job deadline passed with ", done, " of ", total,
                    " scheduled windows through the networks")));
}

// --------------------------------------------------- completion --

bool EngineImpl::Complete(const std::shared_ptr<JobState>& job,
                          absl::StatusOr<JobResult> result) {
  {
    absl::MutexLock lock(&job->mu());
    if (!job->EndLocked(result.status())) return false;
  }
  workers_[job->device()]->DropJob(job->id());
  PublishJobs(job->device());
  auto shared = std::make_shared<absl::StatusOr<JobResult>>(std::move(result));
  job->strand().Post([this, job, shared] { Deliver(job, std::move(*shared)); });
  return true;
}

void EngineImpl::Deliver(const std::shared_ptr<JobState>& job,
                         absl::StatusOr<JobResult> result) {
  JobState::Delivery delivery;
  {
    absl::MutexLock lock(&job->mu());
    delivery = job->StartDeliveryLocked(result.ok() ? &result->tail : nullptr,
                                        absl::Now());
  }
  if (delivery.resume) delivery.resume();
  const absl::StatusCode code = result.status().code();
  if (result.ok()) {
    metrics_->AddAudioSeconds(result->device, result->audio_s);
    if (result->rtfx > 0.0) metrics_->ObserveRequestRtfx(result->rtfx);
    for (const auto& [part, seconds] : result->tail.Parts()) {
      metrics_->ObserveTailSeconds(part, seconds);
    }
  }
  metrics_->RecordJobCompleted(code);
  job->callbacks().on_complete(std::move(result));
  if (options_.trim_after_job_bytes > 0 &&
      delivery.peak_bytes >= options_.trim_after_job_bytes) {
    // Give the freed heap of a large job back to the OS.
    host_->Maintain([] { malloc_trim(0); });
  }
  {
    absl::MutexLock lock(&mu_);
    --active_jobs_;
    if (job->streaming()) --active_streams_;
    live_.erase(job->id());
  }
  PublishJobs(job->device());
}

void EngineImpl::PublishJobs(int device) {
  int streams;
  {
    absl::MutexLock lock(&mu_);
    streams = active_streams_;
  }
  metrics_->SetActiveJobs(workers_[device]->name(),
                          ledger_->device_jobs(device));
  metrics_->SetActiveStreams(streams);
}

// --------------------------------------------------------- engine-wide --

absl::Status EngineImpl::Drain(absl::Time deadline) {
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

EngineState EngineImpl::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

std::vector<DeviceStatus> EngineImpl::Devices() const {
  std::vector<DeviceStatus> out;
  for (const auto& w : workers_) out.push_back(w->Status());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].active_jobs = ledger_->device_jobs(static_cast<int>(i));
    out[i].backlog_audio_s =
        Seconds(ledger_->device_backlog_samples(static_cast<int>(i)));
  }
  return out;
}

double EngineImpl::backlog_audio_s() const {
  return Seconds(ledger_->total_backlog_samples());
}

int EngineImpl::active_jobs() const {
  absl::MutexLock lock(&mu_);
  return active_jobs_;
}

int64_t EngineImpl::job_memory_bytes() const { return ledger_->total_bytes(); }
double EngineImpl::drain_rate() const { return ledger_->drain_rate(); }

}  // namespace internal
}  // namespace diarization::runtime
