// Internal: one device's worker thread and its two batch queues.
//
// The worker is the only caller of its Device's models. It forms batches
// across all jobs assigned to the device (round-robin over jobs, see
// batch_queue.h): a batch starts when it is full or its oldest window has
// waited EngineOptions::max_batch_wait; when both queues are ready, the
// embedding batch goes first, so the embedding stage is never more than one
// batch behind (with the stages on two threads, segmentation waits while a
// segmentation batch and an embedding batch are queued for embedding).
// docs/architecture.md, "Engine scheduling", gives the whole policy. After a
// segmentation batch, each window's powerset output is turned into its
// multilabel segmentation and embedding masks right here (microseconds per
// window; pipeline::WindowMasks, embedding_masks.h) and the window joins the
// embedding queue; after an embedding batch the listener hears of each
// finished window. The offline networks pass (offline_networks.h) is made of
// the same pieces: BatchWindows, the models' RunSpans and WindowMasks.
// Each thread counts its wall time by state (busy, starved, filling, held:
// diarization_device_worker_seconds_total, metrics.h), waking at least once
// a second while it waits so that an idle device shows as idle.
#ifndef DIARIZATION_ENGINE_RUNTIME_DEVICE_WORKER_H_
#define DIARIZATION_ENGINE_RUNTIME_DEVICE_WORKER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/runtime/batch_queue.h"
#include "engine/runtime/batch_windows.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_status.h"
#include "engine/runtime/engine_options.h"
#include "engine/runtime/job_state.h"
#include "engine/runtime/metrics.h"

namespace diarization::runtime::internal {

class WorkerListener {
 public:
  virtual ~WorkerListener() = default;
  // Window `window` of `job` has its embeddings; `times` is its way through
  // the stages. Called on the worker thread.
  virtual void OnWindowDone(const std::shared_ptr<JobState>& job, int window,
                            const WindowTimes& times) = 0;
  // A network batch holding a window of `job` failed.
  virtual void OnJobFailed(const std::shared_ptr<JobState>& job,
                           absl::Status status) = 0;
};

class DeviceWorker {
 public:
  DeviceWorker(Device device, const EngineOptions& options, Metrics* metrics,
               WorkerListener* listener);
  ~DeviceWorker();

  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  // Starts the thread and returns the result of Device::on_worker_start.
  absl::Status Start();
  // Drops what is queued and joins the thread after its current batch.
  void Stop();

  // Queues windows of `job` for segmentation. Windows of terminal jobs are
  // skipped when batches form.
  void EnqueueSegmentation(const std::shared_ptr<JobState>& job,
                           const std::vector<int>& windows);
  // Removes every queued window of the job from both queues at once.
  void DropJob(uint64_t job_id);

  const std::string& name() const { return device_.name; }
  // Fields the worker knows: name, description, health, precisions, memory,
  // queue depths, rtfx (the engine fills the job counters).
  DeviceStatus Status();
  // Rolling RTFx over the last 30 s (see metrics.h); also refreshes the
  // gauge.
  double Rtfx();

 private:
  using Task = WindowTask;
  struct Activity {
    absl::Time time;
    double audio_s;
    double busy_s;
  };

  // One thread's loop: both stages, or only `only` when the device runs
  // its stages on two threads.
  void Loop(std::optional<QueueKind> only);
  bool ReadyLocked(const BatchQueue& queue, int batch_size,
                   absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The embedding queue holds a segmentation batch and an embedding batch:
  // with the stages on two threads, segmentation waits.
  bool EmbeddingBehindLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunSegmentation(std::vector<Task> batch);
  // An embedding batch in two halves (EmbeddingModel::StartSpans /
  // FinishSpans): the embedding thread of a pipelined model starts batch
  // k + 1 before it finishes batch k, so the device has the next batch
  // queued while the host gathers and delivers; otherwise each start is
  // finished at once.
  void StartEmbedding(std::vector<Task> batch);
  void FinishEmbedding();
  // Adds each window's share of the batch time to its job.
  void ChargeJobs(const std::vector<Task>& batch, double seconds,
                  absl::Time start);
  // A batch ran over [start, end) and finished `audio_s` of new audio.
  void RecordActivity(double audio_s, absl::Time start, absl::Time end);
  // After a batch of `stage`, on its thread: the GPU seconds its model
  // added (Device::*_gpu_seconds) to diarization_device_gpu_seconds_total.
  void RecordGpuSeconds(QueueKind stage);
  void PublishDepthsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Device device_;
  const EngineOptions options_;
  Metrics* const metrics_;
  WorkerListener* const listener_;
  // Asked once, before the worker thread owns the models.
  const std::string segmentation_precision_;
  const std::string embedding_precision_;
  std::vector<std::thread> threads_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  BatchQueue seg_queue_ ABSL_GUARDED_BY(mu_);
  BatchQueue emb_queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  int starts_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status start_status_ ABSL_GUARDED_BY(mu_);
  bool healthy_ ABSL_GUARDED_BY(mu_) = true;
  std::deque<Activity> activity_ ABSL_GUARDED_BY(mu_);
  // End of the latest batch, so overlapping batches count their union.
  absl::Time busy_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  // Reused batch buffers, one set per stage (each stage runs on one thread
  // at a time).
  BatchWindows seg_windows_;
  std::vector<float> log_probs_;
  // The embedding stage's: two sets of windows and outputs, one per batch
  // in flight (a batch's audio must stay unchanged until it is finished);
  // the masks are copied at the start.
  BatchWindows emb_windows_[2];
  std::vector<float> embeddings_[2];
  std::vector<float> masks_;
  // Embedding batches started and not finished, oldest first (at most two;
  // only the thread that runs the embeddings touches it).
  struct StartedBatch {
    std::vector<Task> tasks;
    std::vector<WindowData*> data;
    int buffer = 0;
    double audio_s = 0.0;
    absl::Time start;
  };
  std::deque<StartedBatch> emb_started_;
  // When the latest finished embedding batch ended: a pipelined batch's own
  // time starts there if it was started earlier.
  absl::Time emb_last_end_ = absl::InfinitePast();
  // The latest Device::*_gpu_seconds reading of each stage, on its thread.
  double seg_gpu_seconds_ = 0.0;
  double emb_gpu_seconds_ = 0.0;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_DEVICE_WORKER_H_
