// The engine: admission, dispatch, job life cycle, host clustering, drain.
// Batching lives in device_worker.cc, job data in job_state.h.
//
// Locks, in the only order they nest: JobState::mu → DeviceWorker::mu_;
// Engine mu_ and timer_mu_ are leaves: nothing is acquired while holding
// them (absl's deadlock detector checks this in debug builds).
#include "engine/runtime/engine.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/status_macros.h"
#include "engine/runtime/device_worker.h"
#include "engine/runtime/job_state.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime {

std::optional<double> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  double seconds = 0.0;
  if (!absl::SimpleAtod(std::string(*payload), &seconds)) return std::nullopt;
  return seconds;
}

namespace internal {
namespace {

constexpr absl::Duration kMetricsTick = absl::Seconds(1);

double Seconds(int64_t samples) {
  return static_cast<double>(samples) / kSampleRateHz;
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
        metrics_(std::move(metrics)) {
    if (!options_.cluster_function) {
      options_.cluster_function =
          [plda = plda_](std::span<const float> segmentations,
                         std::span<const float> embeddings, int num_chunks,
                         const pipeline::PipelineConfig& config,
                         const pipeline::SpeakerHints& hints) {
            return pipeline::Diarize(segmentations, embeddings, num_chunks,
                                     *plda, config, hints);
          };
    }
  }

  ~EngineImpl() override { Drain(absl::Now()).IgnoreError(); }

  absl::Status Init(std::vector<Device> devices) {
    pool_ = std::make_unique<ThreadPool>(options_.host_threads);
    for (Device& d : devices) {
      workers_.push_back(std::make_unique<DeviceWorker>(std::move(d), options_,
                                                        metrics_.get(), this));
    }
    device_backlog_.assign(workers_.size(), 0);
    device_jobs_.assign(workers_.size(), 0);
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
    timer_ = std::thread([this] { TimerLoop(); });
    return absl::OkStatus();
  }

  absl::Status Submit(const JobOptions& options, std::vector<float> samples,
                      JobCallbacks callbacks) {
    if (samples.empty()) {
      return absl::InvalidArgumentError("Submit: no audio samples");
    }
    const int64_t n = static_cast<int64_t>(samples.size());
    ASSIGN_OR_RETURN(
        std::shared_ptr<JobState> job,
        Accept(options, std::move(callbacks), /*streaming=*/false, n));
    const pipeline::ChunkLayout layout =
        pipeline::ComputeChunks(n, job->options.config);
    std::vector<int> chunks;
    absl::Status error;
    {
      absl::MutexLock lock(&job->mu);
      job->audio = std::move(samples);
      job->num_samples = n;
      job->finished = true;
      job->finish_time = job->accepted_time;
      error = AddChunksLocked(*job, layout.num_chunks, &chunks);
      if (error.ok()) {
        job->num_chunks = layout.num_chunks;
        workers_[job->device]->EnqueueSegmentation(job, chunks);
      }
    }
    if (!error.ok()) Complete(job, error);
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<JobState>> StartJob(const JobOptions& options,
                                                     JobCallbacks callbacks) {
    return Accept(options, std::move(callbacks), /*streaming=*/true, 0);
  }

  absl::Status Append(const std::shared_ptr<JobState>& job,
                      std::span<const float> samples) {
    absl::Status rejected;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return TerminalStatusLocked(*job);
      if (job->finished) {
        return absl::FailedPreconditionError("Append after Finish");
      }
      if (samples.empty()) return absl::OkStatus();
      const int64_t n = static_cast<int64_t>(samples.size());
      double backlog_s = 0.0;
      {
        absl::MutexLock engine_lock(&mu_);
        if (backlog_samples_ + n > MaxBacklogSamples()) {
          backlog_s = Seconds(backlog_samples_);
        } else {
          backlog_samples_ += n;
          device_backlog_[job->device] += n;
          backlog_s = -1.0;
        }
      }
      if (backlog_s >= 0.0) {
        rejected = Exhausted(backlog_s, Seconds(n));
      } else {
        job->backlog_samples += n;
        job->audio.insert(job->audio.end(), samples.begin(), samples.end());
        job->num_samples += n;
        std::vector<int> chunks;
        const int full =
            FullWindows(job->num_samples, job->options.config.step_samples);
        absl::Status s = AddChunksLocked(*job, full, &chunks);
        if (s.ok()) {
          workers_[job->device]->EnqueueSegmentation(job, chunks);
        } else {
          rejected = s;
        }
      }
    }
    PublishBacklog();
    if (!rejected.ok()) {
      Complete(job, rejected);
      return rejected;
    }
    return absl::OkStatus();
  }

  absl::Status Finish(const std::shared_ptr<JobState>& job) {
    absl::Status error;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return TerminalStatusLocked(*job);
      if (job->finished) {
        return absl::FailedPreconditionError("Finish called twice");
      }
      job->finished = true;
      job->finish_time = absl::Now();
      if (job->num_samples == 0) {
        error = absl::InvalidArgumentError(
            "the stream ended without any audio samples");
      } else {
        const pipeline::ChunkLayout layout =
            pipeline::ComputeChunks(job->num_samples, job->options.config);
        std::vector<int> chunks;
        error = AddChunksLocked(*job, layout.num_chunks, &chunks);
        if (error.ok()) {
          job->num_chunks = layout.num_chunks;
          workers_[job->device]->EnqueueSegmentation(job, chunks);
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

  const std::string& DeviceName(int device) const {
    return workers_[device]->name();
  }

  // --- WorkerListener ---
  void OnChunkDone(const std::shared_ptr<JobState>& job, int chunk) override {
    int64_t released = 0;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return;
      if (job->chunk_done[chunk]) return;
      job->chunk_done[chunk] = 1;
      ++job->chunks_done;
      const int total = static_cast<int>(job->chunk_done.size());
      while (job->contiguous_done < total &&
             job->chunk_done[job->contiguous_done]) {
        ++job->contiguous_done;
      }
      const int64_t step = job->options.config.step_samples;
      int64_t processed = 0;
      if (job->contiguous_done > 0) {
        processed = std::min<int64_t>(
            job->num_samples,
            step * (job->contiguous_done - 1) + kWindowSamples);
      }
      if (job->finished && job->chunks_done == job->num_chunks) {
        processed = job->num_samples;
      }
      if (processed > job->processed_samples) {
        released =
            std::min(job->backlog_samples, processed - job->processed_samples);
        job->processed_samples = processed;
        job->backlog_samples -= released;
      }
      TrimAudioLocked(*job);
      MaybeStartClusteringLocked(job);
      MaybeStartPartialLocked(job);
    }
    if (released > 0) {
      {
        absl::MutexLock lock(&mu_);
        backlog_samples_ -= released;
        device_backlog_[job->device] -= released;
      }
      PublishBacklog();
    }
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
    {
      absl::MutexLock lock(&timer_mu_);
      timer_stop_ = true;
      timer_cv_.Signal();
    }
    if (timer_.joinable()) timer_.join();
    if (pool_) pool_->Shutdown();
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
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].active_jobs = device_jobs_[i];
      out[i].backlog_audio_s = Seconds(device_backlog_[i]);
    }
    return out;
  }

  double backlog_audio_s() const {
    absl::MutexLock lock(&mu_);
    return Seconds(backlog_samples_);
  }

  int active_jobs() const {
    absl::MutexLock lock(&mu_);
    return active_jobs_;
  }

  const EngineOptions& options() const { return options_; }
  Metrics& metrics() { return *metrics_; }

 private:
  int64_t MaxBacklogSamples() const {
    return static_cast<int64_t>(options_.max_backlog_audio_s * kSampleRateHz);
  }

  absl::StatusOr<std::shared_ptr<JobState>> Accept(const JobOptions& options,
                                                   JobCallbacks callbacks,
                                                   bool streaming,
                                                   int64_t samples) {
    if (!callbacks.on_complete) {
      return absl::InvalidArgumentError(
          "JobCallbacks::on_complete is required");
    }
    if (options.config.step_samples <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PipelineConfig::step_samples must be > 0, got ",
                       options.config.step_samples));
    }
    const pipeline::SpeakerHints& h = options.hints;
    if (h.num_speakers < 0 || h.min_speakers < 0 || h.max_speakers < 0 ||
        (h.max_speakers > 0 && h.min_speakers > h.max_speakers)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "speaker hints must be >= 0 with min <= max, got num ",
          h.num_speakers, ", min ", h.min_speakers, ", max ", h.max_speakers));
    }
    if (options.partial_interval_s < 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partial_interval_s must be >= 0, got ", options.partial_interval_s));
    }
    if (options.deadline <= absl::Now()) {
      return absl::DeadlineExceededError(
          "the job's deadline had already passed when it was submitted");
    }
    if (samples > MaxBacklogSamples()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%.1f s of audio exceed the engine backlog limit of %.1f s on their "
          "own; split the recording",
          Seconds(samples), options_.max_backlog_audio_s));
    }
    std::shared_ptr<JobState> job;
    double backlog_s = -1.0;
    {
      absl::MutexLock lock(&mu_);
      if (state_ != EngineState::kServing) {
        return absl::UnavailableError(
            "the engine is draining and accepts no new jobs; retry on another "
            "replica");
      }
      const bool full = streaming
                            ? backlog_samples_ >= MaxBacklogSamples()
                            : backlog_samples_ + samples > MaxBacklogSamples();
      if (full) {
        backlog_s = Seconds(backlog_samples_);
      } else {
        // Least loaded: least backlog, then fewest active jobs, then index.
        int best = 0;
        for (int i = 1; i < static_cast<int>(workers_.size()); ++i) {
          if (std::make_pair(device_backlog_[i], device_jobs_[i]) <
              std::make_pair(device_backlog_[best], device_jobs_[best])) {
            best = i;
          }
        }
        job = std::make_shared<JobState>(next_id_++, options,
                                         std::move(callbacks), streaming, best,
                                         samples, pool_.get());
        backlog_samples_ += samples;
        device_backlog_[best] += samples;
        ++device_jobs_[best];
        ++active_jobs_;
        if (streaming) ++active_streams_;
        live_[job->id] = job;
      }
    }
    if (backlog_s >= 0.0) {
      return Exhausted(backlog_s, Seconds(samples));
    }
    PublishBacklog();
    PublishJobs(job->device);
    if (options.deadline != absl::InfiniteFuture()) {
      absl::MutexLock lock(&timer_mu_);
      deadlines_.emplace(options.deadline, job);
      timer_cv_.Signal();
    }
    return job;
  }

  // RESOURCE_EXHAUSTED with the retry hint.
  absl::Status Exhausted(double backlog_s, double request_s) {
    double throughput = 0.0;
    for (auto& w : workers_) throughput += w->Rtfx();
    if (throughput <= 0.0) throughput = 1.0;  // no recent work: real time
    const double excess =
        std::max(0.0, backlog_s + request_s - options_.max_backlog_audio_s);
    const double retry_s = std::max(1.0, excess / throughput);
    absl::Status status = absl::ResourceExhaustedError(absl::StrFormat(
        "engine backlog is %.1f s of audio (limit %.1f s) and this request "
        "adds %.1f s; retry after about %.1f s",
        backlog_s, options_.max_backlog_audio_s, request_s, retry_s));
    status.SetPayload(kRetryAfterPayloadUrl,
                      absl::Cord(absl::StrFormat("%.3f", retry_s)));
    return status;
  }

  absl::Status TerminalStatusLocked(const JobState& job) {
    if (!job.final_status.ok()) return job.final_status;
    return absl::FailedPreconditionError("the job has already completed");
  }

  // Grows the job's window list to `count` windows; returns the new ones.
  absl::Status AddChunksLocked(JobState& job, int count,
                               std::vector<int>* added) {
    const int have = static_cast<int>(job.chunks.size());
    if (count < have) {
      return absl::InternalError(
          absl::StrCat("window layout shrank from ", have, " to ", count,
                       " windows for ", job.num_samples, " samples"));
    }
    for (int c = have; c < count; ++c) {
      job.chunks.push_back(std::make_unique<ChunkData>());
      job.chunk_done.push_back(0);
      added->push_back(c);
    }
    return absl::OkStatus();
  }

  // Drops audio that no pending window needs (windows before contiguous_done
  // are done). Only when the dropped part is at least a window and at least
  // what stays, so the moves of a long recording add up to O(its length)
  // while a live stream keeps only a few windows of audio.
  void TrimAudioLocked(JobState& job) {
    const int64_t keep_from =
        job.options.config.step_samples * job.contiguous_done;
    const int64_t drop =
        std::min(keep_from, job.num_samples) - job.audio_offset;
    const int64_t stays = job.num_samples - job.audio_offset - drop;
    if (drop >= kWindowSamples && drop >= stays) {
      job.audio.erase(job.audio.begin(), job.audio.begin() + drop);
      job.audio_offset += drop;
    }
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
    job->strand.Post([this, job, k] { RunPartial(job, k); });
  }

  void MaybeStartClusteringLocked(const std::shared_ptr<JobState>& job) {
    if (!job->finished || job->clustering_scheduled || job->num_chunks < 0 ||
        job->chunks_done != job->num_chunks) {
      return;
    }
    job->clustering_scheduled = true;
    job->strand.Post([this, job] { RunClustering(job); });
  }

  // Copies the network outputs of windows [0, k) (all done).
  static void GatherLocked(const JobState& job, int k,
                           std::vector<float>* segmentations,
                           std::vector<float>* embeddings) {
    segmentations->resize(static_cast<size_t>(k) * kFrames * kSpeakers);
    embeddings->resize(static_cast<size_t>(k) * kSpeakers * kDim);
    for (int c = 0; c < k; ++c) {
      const ChunkData& d = *job.chunks[c];
      std::copy(d.segmentation.begin(), d.segmentation.end(),
                segmentations->begin() + size_t{c} * d.segmentation.size());
      std::copy(d.embeddings.begin(), d.embeddings.end(),
                embeddings->begin() + size_t{c} * d.embeddings.size());
    }
  }

  void RunPartial(const std::shared_ptr<JobState>& job, int k) {
    std::vector<float> seg, emb;
    PartialResult partial;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) {
        job->partial_in_flight = false;
        return;
      }
      GatherLocked(*job, k, &seg, &emb);
      partial.request_id = job->options.request_id;
      partial.audio_received_s = Seconds(job->num_samples);
      partial.audio_processed_s = Seconds(std::min<int64_t>(
          job->num_samples,
          job->options.config.step_samples * (k - 1) + kWindowSamples));
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<pipeline::DiarizationOutput> out = options_.cluster_function(
        seg, emb, k, job->options.config, job->options.hints);
    metrics_->ObserveStageSeconds(Stage::kPartialClustering,
                                  absl::ToDoubleSeconds(absl::Now() - start));
    {
      absl::MutexLock lock(&job->mu);
      job->partial_in_flight = false;
      // A completion posted meanwhile runs after this task on the strand,
      // so checking here keeps partials strictly before the completion.
      if (job->terminal.load()) return;
    }
    if (!out.ok()) {
      // Provisional only: the final clustering reports real errors.
      std::fprintf(stderr, "engine: partial clustering of job %s failed: %s\n",
                   job->options.request_id.c_str(),
                   std::string(out.status().message()).c_str());
      return;
    }
    partial.segments = std::move(out->segments);
    partial.exclusive_segments = std::move(out->exclusive_segments);
    job->callbacks.on_partial(std::move(partial));
  }

  void RunClustering(const std::shared_ptr<JobState>& job) {
    std::vector<float> seg, emb;
    JobResult result;
    int num_chunks = 0;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.load()) return;
      num_chunks = job->num_chunks;
      GatherLocked(*job, num_chunks, &seg, &emb);
      result.request_id = job->options.request_id;
      result.num_chunks = num_chunks;
      result.audio_s = Seconds(job->num_samples);
      result.device = DeviceName(job->device);
      result.first_window_wait_s = job->first_window_wait_s;
      job->audio.clear();
      job->audio.shrink_to_fit();
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<pipeline::DiarizationOutput> out = options_.cluster_function(
        seg, emb, num_chunks, job->options.config, job->options.hints);
    const absl::Time end = absl::Now();
    metrics_->ObserveStageSeconds(Stage::kClustering,
                                  absl::ToDoubleSeconds(end - start));
    if (!out.ok()) {
      Complete(job, out.status());
      return;
    }
    result.output = *std::move(out);
    {
      absl::MutexLock lock(&job->mu);
      result.processing_s = job->device_seconds_before_finish +
                            absl::ToDoubleSeconds(end - job->finish_time);
    }
    result.rtfx =
        result.processing_s > 0.0 ? result.audio_s / result.processing_s : 0.0;
    if (job->options.return_intermediates) {
      result.segmentations = std::move(seg);
      result.embeddings = std::move(emb);
    }
    Complete(job, std::move(result));
  }

  // The one place a job ends. Returns false when it had already ended.
  bool Complete(const std::shared_ptr<JobState>& job,
                absl::StatusOr<JobResult> result) {
    int64_t released = 0;
    {
      absl::MutexLock lock(&job->mu);
      if (job->terminal.exchange(true)) return false;
      job->final_status = result.status();
      released = job->backlog_samples;
      job->backlog_samples = 0;
      job->audio.clear();
      job->audio.shrink_to_fit();
    }
    workers_[job->device]->DropJob(job->id);
    {
      absl::MutexLock lock(&mu_);
      backlog_samples_ -= released;
      device_backlog_[job->device] -= released;
    }
    PublishBacklog();
    auto shared =
        std::make_shared<absl::StatusOr<JobResult>>(std::move(result));
    job->strand.Post([this, job, shared] { Deliver(job, std::move(*shared)); });
    return true;
  }

  void Deliver(const std::shared_ptr<JobState>& job,
               absl::StatusOr<JobResult> result) {
    const absl::StatusCode code = result.status().code();
    if (result.ok()) {
      metrics_->AddAudioSeconds(result->device, result->audio_s);
      if (result->rtfx > 0.0) metrics_->ObserveRequestRtfx(result->rtfx);
    }
    metrics_->RecordJobCompleted(code);
    job->callbacks.on_complete(std::move(result));
    {
      absl::MutexLock lock(&mu_);
      --active_jobs_;
      --device_jobs_[job->device];
      if (job->streaming) --active_streams_;
      live_.erase(job->id);
    }
    PublishJobs(job->device);
  }

  void PublishBacklog() {
    double backlog_s;
    {
      absl::MutexLock lock(&mu_);
      backlog_s = Seconds(backlog_samples_);
    }
    metrics_->SetBacklogAudioSeconds(backlog_s);
  }

  void PublishJobs(int device) {
    int jobs, streams;
    {
      absl::MutexLock lock(&mu_);
      jobs = device_jobs_[device];
      streams = active_streams_;
    }
    metrics_->SetActiveJobs(workers_[device]->name(), jobs);
    metrics_->SetActiveStreams(streams);
  }

  // Fails jobs whose deadline passed; refreshes device gauges each second.
  void TimerLoop() {
    absl::Time next_tick = absl::Now();
    while (true) {
      std::vector<std::shared_ptr<JobState>> expired;
      bool tick = false;
      {
        absl::MutexLock lock(&timer_mu_);
        absl::Time wake = next_tick;
        if (!deadlines_.empty())
          wake = std::min(wake, deadlines_.begin()->first);
        while (!timer_stop_ && absl::Now() < wake) {
          timer_cv_.WaitWithDeadline(&timer_mu_, wake);
          wake = next_tick;
          if (!deadlines_.empty()) {
            wake = std::min(wake, deadlines_.begin()->first);
          }
        }
        if (timer_stop_) return;
        const absl::Time now = absl::Now();
        while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
          if (auto job = deadlines_.begin()->second.lock()) {
            expired.push_back(std::move(job));
          }
          deadlines_.erase(deadlines_.begin());
        }
        if (now >= next_tick) {
          tick = true;
          next_tick = now + kMetricsTick;
        }
      }
      for (auto& job : expired) {
        int done = 0, total = 0;
        {
          absl::MutexLock lock(&job->mu);
          done = job->chunks_done;
          total = static_cast<int>(job->chunk_done.size());
        }
        Complete(job, absl::DeadlineExceededError(absl::StrCat(
                          "job deadline passed with ", done, " of ", total,
                          " scheduled windows through the networks")));
      }
      if (tick) {
        for (auto& w : workers_) w->Status();  // memory + rtfx gauges
      }
    }
  }

  EngineOptions options_;
  const std::shared_ptr<const pipeline::PldaModel> plda_;
  const std::shared_ptr<Metrics> metrics_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
  std::unique_ptr<ThreadPool> pool_;

  mutable absl::Mutex mu_;
  EngineState state_ ABSL_GUARDED_BY(mu_) = EngineState::kServing;
  int64_t backlog_samples_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> device_backlog_ ABSL_GUARDED_BY(mu_);
  std::vector<int> device_jobs_ ABSL_GUARDED_BY(mu_);
  int active_jobs_ ABSL_GUARDED_BY(mu_) = 0;
  int active_streams_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::shared_ptr<JobState>> live_ ABSL_GUARDED_BY(mu_);

  absl::Mutex timer_mu_;
  absl::CondVar timer_cv_;
  bool timer_stop_ ABSL_GUARDED_BY(timer_mu_) = false;
  std::multimap<absl::Time, std::weak_ptr<JobState>> deadlines_
      ABSL_GUARDED_BY(timer_mu_);
  std::thread timer_;

  absl::Mutex drain_mu_;
  bool drained_ ABSL_GUARDED_BY(drain_mu_) = false;
};

namespace {

class JobHandle : public Job {
 public:
  JobHandle(std::shared_ptr<EngineImpl> engine, std::shared_ptr<JobState> job)
      : engine_(std::move(engine)),
        job_(std::move(job)),
        device_(engine_->DeviceName(job_->device)) {}

  ~JobHandle() override {
    if (!finished_.load()) engine_->Cancel(job_);
  }

  absl::Status Append(std::span<const float> samples) override {
    return engine_->Append(job_, samples);
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

 private:
  std::shared_ptr<EngineImpl> engine_;
  std::shared_ptr<JobState> job_;
  const std::string device_;
  std::atomic<bool> finished_{false};
};

class EngineFacade : public Engine {
 public:
  explicit EngineFacade(std::shared_ptr<EngineImpl> impl)
      : impl_(std::move(impl)) {}
  ~EngineFacade() override { impl_->Drain(absl::Now()).IgnoreError(); }

  absl::Status Submit(const JobOptions& options, std::vector<float> samples,
                      JobCallbacks callbacks) override {
    return impl_->Submit(options, std::move(samples), std::move(callbacks));
  }
  absl::StatusOr<std::unique_ptr<Job>> StartJob(
      const JobOptions& options, JobCallbacks callbacks) override {
    ASSIGN_OR_RETURN(std::shared_ptr<JobState> job,
                     impl_->StartJob(options, std::move(callbacks)));
    return std::unique_ptr<Job>(new JobHandle(impl_, std::move(job)));
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
  if (options.host_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Engine::Create: host_threads must be >= 1, got ",
                     options.host_threads));
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
