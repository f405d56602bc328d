// Internal: one device's queue of windows waiting for a network batch.
//
// Windows are kept per job, and a batch takes them round-robin across jobs
// (one window from each job in turn, starting after the job that was served
// last), so a long file whose hundreds of windows arrive at once cannot hold
// back the windows of live streams queued behind it: every job with work
// gets a share of every batch. Within a job, windows keep their order.
//
// The batch handed out lists each job's windows together, in window order
// (the jobs by id): which windows a batch holds is the round-robin's
// choice, their order within it is free, and together a job's overlapping
// windows merge into one span of its audio (batch_windows.h). In round-robin
// order no two neighbours shared a job, so under many streams every window
// copied and uploaded its 10 s whole: 128 windows of 64 jobs took 82 MB
// twice on the host per segmentation batch instead of 45 MB.
#ifndef DIARIZATION_ENGINE_RUNTIME_BATCH_QUEUE_H_
#define DIARIZATION_ENGINE_RUNTIME_BATCH_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "engine/runtime/job_state.h"

namespace diarization::runtime::internal {

struct WindowTask {
  std::shared_ptr<JobState> job;
  int window = 0;
  absl::Time enqueued;
  // Filled in by the device worker as the window moves on.
  WindowTimes times;
};

// Thread-compatible (the device worker guards it with its mutex).
class BatchQueue {
 public:
  void Push(WindowTask task);
  // Up to `max_batch` windows, round-robin across jobs, listed job by job
  // (ascending id) and in window order within a job; windows of jobs that
  // have completed (JobState::terminal) are discarded on the way.
  std::vector<WindowTask> PopBatch(int max_batch);
  // Up to `max_batch` windows of streaming jobs only (JobState::streaming),
  // round-robin across them, listed as PopBatch lists them.
  std::vector<WindowTask> PopStreamingBatch(int max_batch);
  // Whether a streaming job has a window queued.
  bool HasStreaming() const;
  // Removes every window of the job.
  void DropJob(uint64_t job_id);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Enqueue time of the oldest window (InfiniteFuture when empty).
  absl::Time oldest() const;
  // Number of jobs with queued windows.
  size_t jobs() const { return by_job_.size(); }

 private:
  // Keyed by job id: ids grow with acceptance, so iteration is job order.
  std::map<uint64_t, std::deque<WindowTask>> by_job_;
  size_t size_ = 0;
  // The next batch starts with the first job whose id is >= this.
  uint64_t next_job_ = 0;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_BATCH_QUEUE_H_
