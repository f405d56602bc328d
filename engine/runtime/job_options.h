// What a caller gives with a job: its options (JobOptions) and the
// callbacks that receive its results (JobCallbacks), and the checks the
// engine makes of them before accepting the job.
#ifndef DIARIZATION_ENGINE_RUNTIME_JOB_OPTIONS_H_
#define DIARIZATION_ENGINE_RUNTIME_JOB_OPTIONS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/job_results.h"

namespace diarization::runtime {

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

struct JobCallbacks {
  // Required. Exactly once per accepted job (see the completion contract).
  std::function<void(absl::StatusOr<JobResult>)> on_complete;
  // Optional; only with JobOptions::partial_interval_s > 0.
  std::function<void(PartialResult)> on_partial;
};

namespace internal {
// OK for options and callbacks a job may start with: on_complete set,
// step_samples > 0, valid speaker hints, partial_interval_s >= 0;
// DEADLINE_EXCEEDED when the deadline has already passed; else
// INVALID_ARGUMENT with the reason.
absl::Status ValidateJobOptions(const JobOptions& options,
                                const JobCallbacks& callbacks);
}  // namespace internal

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_JOB_OPTIONS_H_
