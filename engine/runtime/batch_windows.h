// Internal: the windows of one device batch as spans of their jobs' audio
// (models::WindowSpans), so that the overlapping windows of a job (10 s
// long, 1 s apart) are copied once into the batch, not once per window, and
// cross to the device as one span (engine/models/cuda_window_upload.h). A
// run of windows of one job merges while each window starts inside the
// audio already taken; anything else starts a new span. Windows of a job
// that ended (cancelled, deadline, error) while their window sat in a popped
// batch have had their audio freed: they are silence, and their outputs
// are dropped after the batch.
#ifndef DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_
#define DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "engine/models/model_interfaces.h"
#include "engine/runtime/job_state.h"

namespace diarization::runtime::internal {

class BatchWindows {
 public:
  void Clear();
  // Adds window `chunk` of `job` as the next window of the batch.
  void Add(const JobState& job, int chunk)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu);
  // Valid until the next Clear/Add.
  models::WindowSpans spans() const;
  int size() const { return static_cast<int>(starts_.size()); }
  // Samples copied so far (for tests: a run of n consecutive windows takes
  // (n − 1)·step + 160000, not n·160000).
  int64_t audio_samples() const { return static_cast<int64_t>(audio_.size()); }

 private:
  std::vector<float> audio_;
  std::vector<int64_t> starts_, ends_;
  // The span being extended: its job, its range in the job's samples, and
  // where it begins in audio_.
  const JobState* run_job_ = nullptr;
  int64_t run_lo_ = 0, run_hi_ = 0, run_base_ = 0;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_
