// Internal: the engine behind Engine and Job (engine.h): the job life cycle
// — accept, feed, finish, complete, deliver — and the drain. Each other
// concern is a class that owns its state, and the engine wires them:
//   AdmissionLedger (admission_ledger.h)  backlog, peers, bytes, drain rate,
//                                         the backlog gauge
//   JobState        (job_state.h)         one job's audio, windows, progress,
//                                         trimming, bytes and tail times
//   DeviceWorker    (device_worker.h)     batching and the networks
//   HostTasks       (host_tasks.h)        final and partial clustering
//   PartialResults  (partial_results.h)   a stream's provisional results
//   DeadlineTimer   (deadline_timer.h)    job deadlines, the gauge tick
// The handles the caller holds (JobHandle, EngineFacade) are in
// engine_facade.cc.
//
// Locks, in the only orders they nest: JobState::mu → DeviceWorker::mu_,
// JobState::mu → AdmissionLedger (its mutexes) and Engine mu_ →
// AdmissionLedger (Accept assigns the device while the engine state cannot
// change). The ledger's, the timer's and the host tasks' mutexes are
// leaves: nothing is acquired while holding them (absl's deadlock detector
// checks this in debug builds). No user callback runs under any of them:
// callbacks run on the job's Strand.
#ifndef DIARIZATION_ENGINE_RUNTIME_ENGINE_IMPL_H_
#define DIARIZATION_ENGINE_RUNTIME_ENGINE_IMPL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/runtime/admission_ledger.h"
#include "engine/runtime/deadline_timer.h"
#include "engine/runtime/device_worker.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/host_tasks.h"
#include "engine/runtime/job_state.h"
#include "engine/runtime/partial_results.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime::internal {

class EngineImpl : public WorkerListener {
 public:
  EngineImpl(EngineOptions options,
             std::shared_ptr<const pipeline::PldaModel> plda,
             std::shared_ptr<Metrics> metrics);
  // Drain(absl::Now()).
  ~EngineImpl() override;

  // Starts the workers, the host pool and the timer on `devices`.
  absl::Status Init(std::vector<Device> devices);

  // --- Intake (Engine and Job, engine.h, say what each does) ---
  absl::StatusOr<Reservation> Reserve(const AdmissionRequest& request);
  // On error `samples` is untouched.
  absl::StatusOr<std::shared_ptr<JobState>> Submit(const JobOptions& options,
                                                   std::vector<float>& samples,
                                                   CropEdges& crop_edges,
                                                   JobCallbacks callbacks,
                                                   Reservation reservation);
  absl::StatusOr<std::shared_ptr<JobState>> StartJob(const JobOptions& options,
                                                     JobCallbacks callbacks,
                                                     Reservation reservation);
  // `owned`, when set, holds `samples` and may be taken.
  absl::Status Append(const std::shared_ptr<JobState>& job,
                      std::span<const float> samples,
                      const CropEdges& crop_edges,
                      std::vector<float>* owned = nullptr);
  absl::Status Finish(const std::shared_ptr<JobState>& job);
  void Cancel(const std::shared_ptr<JobState>& job);
  void NotifyWhenBacklogAtMost(const std::shared_ptr<JobState>& job,
                               double seconds, std::function<void()> resume);
  const std::string& DeviceName(int device) const;

  // --- WorkerListener ---
  void OnWindowDone(const std::shared_ptr<JobState>& job, int window,
                    const WindowTimes& times) override;
  void OnJobFailed(const std::shared_ptr<JobState>& job,
                   absl::Status status) override;

  // --- Engine-wide ---
  absl::Status Drain(absl::Time deadline);
  EngineState state() const;
  std::vector<DeviceStatus> Devices() const;
  double backlog_audio_s() const;
  int active_jobs() const;
  int64_t job_memory_bytes() const;
  double drain_rate() const;
  const EngineOptions& options() const { return options_; }
  Metrics& metrics() { return *metrics_; }

 private:
  absl::Status CheckServing() const;
  // Turns an admitted reservation into a live job on a device.
  absl::StatusOr<std::shared_ptr<JobState>> Accept(const JobOptions& options,
                                                   JobCallbacks callbacks,
                                                   bool streaming,
                                                   Reservation reservation);
  // Queues the final clustering once every window of the ended job is done.
  void MaybeStartClusteringLocked(const std::shared_ptr<JobState>& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job->mu());
  void OnClustered(const std::shared_ptr<JobState>& job, ClusterOutcome out);
  void Expire(const std::shared_ptr<JobState>& job);
  // The one place a job ends. Returns false when it had already ended.
  bool Complete(const std::shared_ptr<JobState>& job,
                absl::StatusOr<JobResult> result);
  // On the job's strand: the resume, the metrics, on_complete.
  void Deliver(const std::shared_ptr<JobState>& job,
               absl::StatusOr<JobResult> result);
  void PublishJobs(int device);

  EngineOptions options_;
  const std::shared_ptr<const pipeline::PldaModel> plda_;
  const std::shared_ptr<Metrics> metrics_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
  std::shared_ptr<AdmissionLedger> ledger_;
  std::unique_ptr<HostTasks> host_;
  std::unique_ptr<PartialResults> partials_;
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

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_IMPL_H_
