// Internal: a stream's provisional results (JobOptions::partial_interval_s,
// JobCallbacks::on_partial). Each time another interval of the stream's
// audio has gone through both networks, the windows done so far are
// clustered on a host thread (HostTasks::Kind::kPartial) and the result is
// posted on the job's strand. At most one provisional clustering per job
// runs at a time (JobState::StartPartialLocked); one not yet started when
// the job's final clustering is scheduled is dropped, and so is a result
// that would come after the completion.
#ifndef DIARIZATION_ENGINE_RUNTIME_PARTIAL_RESULTS_H_
#define DIARIZATION_ENGINE_RUNTIME_PARTIAL_RESULTS_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "engine/runtime/host_tasks.h"
#include "engine/runtime/job_state.h"

namespace diarization::runtime::internal {

// Thread-safe (it keeps no state of its own: the job keeps its own).
class PartialResults {
 public:
  // `host` must outlive it.
  explicit PartialResults(HostTasks* host) : host_(host) {}

  // After a window of `job` is done: queues a provisional clustering when
  // one is due.
  void MaybeStartLocked(const std::shared_ptr<JobState>& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job->mu());

 private:
  void OnClustered(const std::shared_ptr<JobState>& job, ClusterOutcome out);

  HostTasks* const host_;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_PARTIAL_RESULTS_H_
