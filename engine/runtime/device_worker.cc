#include "engine/runtime/device_worker.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/pipeline/embedding_masks.h"

namespace diarization::runtime::internal {
namespace {

constexpr absl::Duration kRtfxWindow = absl::Seconds(30);
// A waiting worker wakes at least this often, so that its state counters
// (diarization_device_worker_seconds_total) advance while it is idle and a
// scrape sees an idle device as idle, not as nothing.
constexpr absl::Duration kMaxUnaccountedWait = absl::Seconds(1);

std::string_view ThreadLabel(std::optional<QueueKind> only) {
  if (!only.has_value()) return "both";
  return QueueName(*only);
}

std::string PrecisionOr(const std::string& given, const std::string& model) {
  return given.empty() ? model : given;
}

}  // namespace

DeviceWorker::DeviceWorker(Device device, const EngineOptions& options,
                           Metrics* metrics, WorkerListener* listener)
    : device_(std::move(device)),
      options_(options),
      metrics_(metrics),
      listener_(listener),
      segmentation_precision_(PrecisionOr(device_.segmentation_precision,
                                          device_.segmentation->precision())),
      embedding_precision_(PrecisionOr(device_.embedding_precision,
                                       device_.embedding->precision())) {}

DeviceWorker::~DeviceWorker() { Stop(); }

absl::Status DeviceWorker::Start() {
  for (auto [windows, batch] :
       {std::pair{&seg_windows_, options_.segmentation_batch_size},
        std::pair{&emb_windows_[0], options_.embedding_batch_size},
        std::pair{&emb_windows_[1], options_.embedding_batch_size}}) {
    const absl::Status s =
        windows->UsePinnedBuffer(device_.pinned_host_floats, batch);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("device ", device_.name,
                                 ": page-locked memory for a batch's audio: ",
                                 s.message()));
    }
  }
  metrics_->SetDeviceInfo(device_.name, device_.description,
                          segmentation_precision_, embedding_precision_);
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
    PublishDepthsLocked();
  }
  if (device_.concurrent_stages) {
    threads_.emplace_back([this] { Loop(QueueKind::kSegmentation); });
    threads_.emplace_back([this] { Loop(QueueKind::kEmbedding); });
  } else {
    threads_.emplace_back([this] { Loop(std::nullopt); });
  }
  const int n = static_cast<int>(threads_.size());
  absl::MutexLock lock(&mu_);
  auto all_started = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return starts_done_ == n;
  };
  mu_.Await(absl::Condition(&all_started));
  return start_status_;
}

void DeviceWorker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    seg_queue_ = BatchQueue();
    emb_queue_ = BatchQueue();
    if (started_) PublishDepthsLocked();
    cv_.SignalAll();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void DeviceWorker::EnqueueSegmentation(const std::shared_ptr<JobState>& job,
                                       const std::vector<int>& windows) {
  if (windows.empty()) return;
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  for (int c : windows) {
    Task task{job, c, now};
    task.times.segmentation_queued = now;
    seg_queue_.Push(std::move(task));
  }
  PublishDepthsLocked();
  cv_.SignalAll();  // either thread may be the one waiting for this queue
}

void DeviceWorker::DropJob(uint64_t job_id) {
  absl::MutexLock lock(&mu_);
  seg_queue_.DropJob(job_id);
  emb_queue_.DropJob(job_id);
  PublishDepthsLocked();
}

void DeviceWorker::PublishDepthsLocked() {
  metrics_->SetQueueDepth(device_.name, QueueKind::kSegmentation,
                          static_cast<double>(seg_queue_.size()));
  metrics_->SetQueueDepth(device_.name, QueueKind::kEmbedding,
                          static_cast<double>(emb_queue_.size()));
}

bool DeviceWorker::ReadyLocked(const BatchQueue& queue, int batch_size,
                               absl::Time now) const {
  if (queue.empty()) return false;
  return static_cast<int>(queue.size()) >= batch_size ||
         now - queue.oldest() >= options_.max_batch_wait;
}

bool DeviceWorker::EmbeddingBehindLocked() const {
  // Segmentation goes on while the embedding queue holds less than one
  // segmentation batch and one embedding batch: then the embedding thread
  // has work for the whole of the next segmentation batch (a window's
  // segmentation costs less than its embedding), and at most that plus one
  // segmentation batch is held between the stages. With a limit of two
  // embedding batches, a segmentation batch of 128 made the embedding
  // thread wait for it: the stages took turns instead of overlapping (on an
  // H200, 64 streams: embedding busy 58 % and segmentation 40 % of the wall
  // time).
  return static_cast<int>(emb_queue_.size()) >=
         options_.segmentation_batch_size + options_.embedding_batch_size;
}

DeviceStatus DeviceWorker::Status() {
  DeviceStatus s;
  s.name = device_.name;
  s.description = device_.description;
  s.segmentation_precision = segmentation_precision_;
  s.embedding_precision = embedding_precision_;
  {
    absl::MutexLock lock(&mu_);
    s.healthy = healthy_;
    s.segmentation_queue_depth = static_cast<int>(seg_queue_.size());
    s.embedding_queue_depth = static_cast<int>(emb_queue_.size());
  }
  if (device_.memory_stats) {
    s.memory = device_.memory_stats();
    metrics_->SetDeviceMemory(device_.name, s.memory);
  }
  s.rtfx = Rtfx();
  return s;
}

double DeviceWorker::Rtfx() {
  double audio_s = 0.0, busy_s = 0.0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time cutoff = absl::Now() - kRtfxWindow;
    while (!activity_.empty() && activity_.front().time < cutoff) {
      activity_.pop_front();
    }
    for (const Activity& a : activity_) {
      audio_s += a.audio_s;
      busy_s += a.busy_s;
    }
  }
  const double rtfx = busy_s > 0.0 ? audio_s / busy_s : 0.0;
  metrics_->SetDeviceRtfx(device_.name, rtfx);
  return rtfx;
}

void DeviceWorker::RecordActivity(double audio_s, absl::Time start,
                                  absl::Time end) {
  absl::MutexLock lock(&mu_);
  // Busy time is the union of batch intervals: with concurrent stages two
  // batches may overlap, and the device was busy once, not twice.
  const double busy_s =
      std::max(0.0, absl::ToDoubleSeconds(end - std::max(start, busy_until_)));
  busy_until_ = std::max(busy_until_, end);
  activity_.push_back(Activity{end, audio_s, busy_s});
}

void DeviceWorker::Loop(std::optional<QueueKind> only) {
  absl::Status start = absl::OkStatus();
  if (device_.on_worker_start) start = device_.on_worker_start();
  {
    absl::MutexLock lock(&mu_);
    if (!start.ok() && start_status_.ok()) start_status_ = start;
    ++starts_done_;
  }
  if (!start.ok()) return;
  const bool do_seg = !only.has_value() || *only == QueueKind::kSegmentation;
  const bool do_emb = !only.has_value() || *only == QueueKind::kEmbedding;
  // Each instant of this thread goes to exactly one state: [mark, now) to
  // the state that just ended. The time to take the lock and pick a batch
  // goes to the wait that follows it or to the batch it picks.
  const std::string_view thread_label = ThreadLabel(only);
  absl::Time mark = absl::Now();
  auto account = [&](WorkerState state, absl::Time now) {
    metrics_->AddWorkerSeconds(device_.name, thread_label, state,
                               absl::ToDoubleSeconds(now - mark));
    mark = now;
  };

  // A pipelined embedding model on a thread of its own keeps a batch in
  // flight while this thread gathers the next (StartEmbedding).
  const bool pipelined = do_emb && !do_seg && device_.embedding->pipelined();
  while (true) {
    std::vector<Task> batch;
    QueueKind kind = QueueKind::kSegmentation;
    // Nothing ready and a batch in flight: finish it instead of waiting, so
    // its windows are not held back by the wait.
    bool finish_first = false;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (stop_) break;
        const absl::Time now = absl::Now();
        // Segmentation holds back while the embedding stage is behind (only
        // when the stages run on their own threads: one thread alternating
        // the stages never lets it fall behind, see take_emb).
        const bool seg_held = do_seg && !do_emb && EmbeddingBehindLocked();
        const bool seg_ready =
            do_seg && !seg_held &&
            ReadyLocked(seg_queue_, options_.segmentation_batch_size, now);
        const bool emb_ready =
            do_emb &&
            ReadyLocked(emb_queue_, options_.embedding_batch_size, now);
        // EngineOptions::live_windows_first: streaming windows at once, in
        // batches of their own, embeddings first.
        const bool live_emb =
            options_.live_windows_first && do_emb && emb_queue_.HasStreaming();
        const bool live_seg = options_.live_windows_first && do_seg &&
                              !seg_held && seg_queue_.HasStreaming();
        const bool live = live_emb || live_seg;
        if (seg_ready || emb_ready || live) {
          // A ready embedding batch goes first: the windows it holds are
          // halfway through and finish jobs; segmentation only refills the
          // embedding queue, so it waits at most the embeddings of one of
          // its own batches. (Oldest-window-first starved the embedding
          // stage behind a long job's windows, all queued at one instant.)
          const bool take_emb = live ? live_emb : emb_ready;
          kind = take_emb ? QueueKind::kEmbedding : QueueKind::kSegmentation;
          BatchQueue& queue = take_emb ? emb_queue_ : seg_queue_;
          const int size = take_emb ? options_.embedding_batch_size
                                    : options_.segmentation_batch_size;
          batch = live ? queue.PopStreamingBatch(size) : queue.PopBatch(size);
          for (const Task& t : batch) {
            metrics_->ObserveQueueWait(device_.name, kind,
                                       absl::ToDoubleSeconds(now - t.enqueued));
          }
          PublishDepthsLocked();
          // A held segmentation thread may go on now.
          if (take_emb && device_.concurrent_stages) cv_.SignalAll();
          if (!batch.empty()) break;
          continue;
        }
        // (`pipelined` only on the embedding thread: emb_started_ is its.)
        if (pipelined && !emb_started_.empty()) {
          finish_first = true;
          break;
        }
        absl::Time wake = now + kMaxUnaccountedWait;
        if (do_seg && !seg_held && !seg_queue_.empty()) {
          wake = std::min(wake, seg_queue_.oldest() + options_.max_batch_wait);
        }
        if (do_emb && !emb_queue_.empty()) {
          wake = std::min(wake, emb_queue_.oldest() + options_.max_batch_wait);
        }
        // Why this thread waits: held back, windows short of a batch, or
        // nothing at all in the queues it serves.
        const bool any_queued =
            (do_seg && !seg_queue_.empty()) || (do_emb && !emb_queue_.empty());
        const bool held = seg_held && !seg_queue_.empty();
        const WorkerState waiting = held         ? WorkerState::kHeld
                                    : any_queued ? WorkerState::kFilling
                                                 : WorkerState::kStarved;
        cv_.WaitWithDeadline(&mu_, wake);
        account(waiting, absl::Now());
      }
      if (batch.empty() && !finish_first) break;  // stopping
    }
    if (finish_first) {
      FinishEmbedding();
    } else if (kind == QueueKind::kSegmentation) {
      RunSegmentation(std::move(batch));
    } else {
      StartEmbedding(std::move(batch));
      // Batch k + 1 is queued on the device: finish batch k.
      if (!pipelined || emb_started_.size() > 1) FinishEmbedding();
    }
    account(WorkerState::kBusy, absl::Now());
  }
  // Stopping: what was started still gets its answer (on this thread: only
  // the thread that runs the embeddings touches emb_started_).
  if (do_emb) {
    while (!emb_started_.empty()) FinishEmbedding();
  }
  account(WorkerState::kBusy, absl::Now());
  if (device_.on_worker_stop) device_.on_worker_stop();
}

void DeviceWorker::ChargeJobs(const std::vector<Task>& batch, double seconds,
                              absl::Time start) {
  const double share = seconds / static_cast<double>(batch.size());
  for (const Task& t : batch) t.job->ChargeDeviceSeconds(share, start);
}

void DeviceWorker::RecordGpuSeconds(QueueKind stage) {
  const bool seg = stage == QueueKind::kSegmentation;
  const std::function<double()>& read =
      seg ? device_.segmentation_gpu_seconds : device_.embedding_gpu_seconds;
  if (!read) return;
  // Only this stage's thread touches its reading (see the header).
  double& last = seg ? seg_gpu_seconds_ : emb_gpu_seconds_;
  const double now = read();
  if (now > last)
    metrics_->AddDeviceGpuSeconds(device_.name, stage, now - last);
  last = std::max(last, now);
}

void DeviceWorker::RunSegmentation(std::vector<Task> batch) {
  const int n = static_cast<int>(batch.size());
  constexpr int kOut = kFramesPerWindow * models::kPowersetClasses;
  seg_windows_.Clear();
  log_probs_.resize(static_cast<size_t>(n) * kOut);
  std::vector<WindowData*> data(n);
  for (int i = 0; i < n; ++i) {
    JobState& job = *batch[i].job;
    absl::MutexLock lock(&job.mu());
    seg_windows_.Add(job, batch[i].window);
    // Written below, outside the lock (JobState::WindowOutputsLocked).
    data[i] = job.WindowOutputsLocked(batch[i].window);
  }
  const absl::Time start = absl::Now();
  absl::Status status =
      device_.segmentation->RunSpans(seg_windows_.spans(), log_probs_);
  const absl::Time end = absl::Now();
  const double seconds = absl::ToDoubleSeconds(end - start);
  metrics_->ObserveStageSeconds(Stage::kSegmentation, seconds);
  metrics_->ObserveBatchSize(device_.name, QueueKind::kSegmentation, n);
  RecordGpuSeconds(QueueKind::kSegmentation);
  RecordActivity(0.0, start, end);
  {
    absl::MutexLock lock(&mu_);
    healthy_ = status.ok();
  }
  if (!status.ok()) {
    const absl::Status error = absl::InternalError(
        absl::StrCat("segmentation batch of ", n, " windows failed on device ",
                     device_.name, ": ", status.message()));
    for (const Task& t : batch) listener_->OnJobFailed(t.job, error);
    return;
  }
  ChargeJobs(batch, seconds, start);

  std::vector<Task> next;
  next.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (batch[i].job->terminal()) continue;
    batch[i].times.segmentation_start = start;
    batch[i].times.segmentation_end = end;
    WindowData* d = data[i];
    // The host step between the networks (pipeline/embedding_masks.h,
    // shared with the offline pass), with this window's job's config.
    absl::Status masked = pipeline::WindowMasks(
        std::span<const float>(log_probs_.data() + size_t{i} * kOut, kOut),
        batch[i].job->options().config, std::span<float>(d->segmentation),
        std::span<float>(d->masks));
    if (!masked.ok()) {
      listener_->OnJobFailed(batch[i].job, std::move(masked));
      continue;
    }
    next.push_back(std::move(batch[i]));
  }
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  for (Task& t : next) {
    t.enqueued = now;
    emb_queue_.Push(std::move(t));
  }
  PublishDepthsLocked();
  cv_.SignalAll();  // the embedding thread, when the stages run apart
}

void DeviceWorker::StartEmbedding(std::vector<Task> batch) {
  const int n = static_cast<int>(batch.size());
  constexpr int kMask = kLocalSpeakers * kFramesPerWindow;
  constexpr int kEmb = kLocalSpeakers * kEmbeddingDim;
  StartedBatch started;
  // The buffer the batch in flight (if any) does not use.
  started.buffer = emb_started_.empty() ? 0 : 1 - emb_started_.back().buffer;
  BatchWindows& windows = emb_windows_[started.buffer];
  std::vector<float>& embeddings = embeddings_[started.buffer];
  windows.Clear();
  masks_.resize(static_cast<size_t>(n) * kMask);
  embeddings.resize(static_cast<size_t>(n) * kEmb);
  started.data.resize(n);
  for (int i = 0; i < n; ++i) {
    JobState& job = *batch[i].job;
    absl::MutexLock lock(&job.mu());
    windows.AddCrop(job, batch[i].window);
    // Written at FinishEmbedding, outside the lock
    // (JobState::WindowOutputsLocked).
    started.data[i] = job.WindowOutputsLocked(batch[i].window);
    std::copy(started.data[i]->masks.begin(), started.data[i]->masks.end(),
              masks_.begin() + static_cast<size_t>(i) * kMask);
    started.audio_s +=
        static_cast<double>(job.options().config.step_samples) / kSampleRateHz;
  }
  started.start = absl::Now();
  started.tasks = std::move(batch);
  metrics_->ObserveBatchSize(device_.name, QueueKind::kEmbedding, n);
  const absl::Status status = device_.embedding->StartSpans(
      windows.spans(), masks_, kLocalSpeakers, embeddings);
  if (!status.ok()) {
    // Nothing started (the model's contract): the batch fails now.
    {
      absl::MutexLock lock(&mu_);
      healthy_ = false;
    }
    const absl::Status error = absl::InternalError(absl::StrCat(
        "embedding batch of ", n, " windows could not start on device ",
        device_.name, ": ", status.message()));
    for (const Task& t : started.tasks) listener_->OnJobFailed(t.job, error);
    return;
  }
  emb_started_.push_back(std::move(started));
}

void DeviceWorker::FinishEmbedding() {
  StartedBatch b = std::move(emb_started_.front());
  emb_started_.pop_front();
  const int n = static_cast<int>(b.tasks.size());
  constexpr int kEmb = kLocalSpeakers * kEmbeddingDim;
  const absl::Status status = device_.embedding->FinishSpans();
  const absl::Time end = absl::Now();
  // The batch's own time: a pipelined batch started while the previous one
  // ran, and its time begins where that one's ended.
  const absl::Time start = std::max(b.start, emb_last_end_);
  emb_last_end_ = end;
  const double seconds = absl::ToDoubleSeconds(end - start);
  metrics_->ObserveStageSeconds(Stage::kEmbedding, seconds);
  RecordGpuSeconds(QueueKind::kEmbedding);
  {
    absl::MutexLock lock(&mu_);
    healthy_ = status.ok();
  }
  if (!status.ok()) {
    RecordActivity(0.0, start, end);
    const absl::Status error = absl::InternalError(
        absl::StrCat("embedding batch of ", n, " windows failed on device ",
                     device_.name, ": ", status.message()));
    for (const Task& t : b.tasks) listener_->OnJobFailed(t.job, error);
    return;
  }
  RecordActivity(b.audio_s, start, end);
  ChargeJobs(b.tasks, seconds, start);
  const std::vector<float>& embeddings = embeddings_[b.buffer];
  for (int i = 0; i < n; ++i) {
    std::copy(embeddings.begin() + static_cast<size_t>(i) * kEmb,
              embeddings.begin() + static_cast<size_t>(i + 1) * kEmb,
              b.data[i]->embeddings.begin());
  }
  for (Task& t : b.tasks) {
    t.times.embedding_start = start;
    t.times.embedding_end = end;
    if (!t.job->terminal()) {
      listener_->OnWindowDone(t.job, t.window, t.times);
    }
  }
}

}  // namespace diarization::runtime::internal
