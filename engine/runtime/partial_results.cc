#include "engine/runtime/partial_results.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/diagnostics.h"

namespace diarization::runtime::internal {

void PartialResults::MaybeStartLocked(const std::shared_ptr<JobState>& job) {
  const std::optional<int> windows = job->StartPartialLocked();
  if (!windows.has_value()) return;
  const int k = *windows;
  host_->Cluster(
      HostTasks::Kind::kPartial, k,
      [job, k]() -> std::optional<ClusterInput> {
        absl::MutexLock lock(&job->mu());
        return job->GatherPartialLocked(k);
      },
      [this, job](ClusterOutcome out) { OnClustered(job, std::move(out)); });
}

void PartialResults::OnClustered(const std::shared_ptr<JobState>& job,
                                 ClusterOutcome out) {
  PartialResult partial;
  {
    absl::MutexLock lock(&job->mu());
    if (!job->EndPartialLocked(out.input, &partial)) return;
  }
  if (!out.output.ok()) {
    // Provisional only: the final clustering reports real errors.
    ReportDiagnostic(
        "engine",
        absl::StrCat("partial clustering of job ", job->options().request_id,
                     " failed: ", out.output.status().message()));
    return;
  }
  partial.segments = std::move(out.output->segments);
  partial.exclusive_segments = std::move(out.output->exclusive_segments);
  partial.labels = std::move(out.output->labels);
  partial.centroids = std::move(out.output->centroids);
  // The strand orders it before a completion posted later; one posted
  // earlier has set `delivering`, and the partial is dropped.
  job->strand().Post([job, partial = std::move(partial)]() mutable {
    {
      absl::MutexLock lock(&job->mu());
      if (job->delivering_locked()) return;
    }
    job->callbacks().on_partial(std::move(partial));
  });
}

}  // namespace diarization::runtime::internal
