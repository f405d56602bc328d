#include "engine/runtime/job_options.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/clustering.h"

namespace diarization::runtime::internal {

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

}  // namespace diarization::runtime::internal
