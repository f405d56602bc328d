#include "engine/runtime/host_tasks.h"

#include <algorithm>
#include <utility>

namespace diarization::runtime::internal {

ClusterInput GatherLocked(const JobState& job, int k) {
  ClusterInput in;
  in.num_windows = k;
  in.config = job.options.config;
  in.hints = job.options.hints;
  in.segmentations.resize(static_cast<size_t>(k) * kFramesPerWindow *
                          kLocalSpeakers);
  in.embeddings.resize(static_cast<size_t>(k) * kLocalSpeakers * kEmbeddingDim);
  for (int c = 0; c < k; ++c) {
    const WindowData& d = *job.windows[c];
    std::copy(d.segmentation.begin(), d.segmentation.end(),
              in.segmentations.begin() +
                  static_cast<size_t>(c) * d.segmentation.size());
    std::copy(
        d.embeddings.begin(), d.embeddings.end(),
        in.embeddings.begin() + static_cast<size_t>(c) * d.embeddings.size());
  }
  return in;
}

HostTasks::HostTasks(int threads, ClusterFunction cluster, Metrics* metrics)
    : cluster_(std::move(cluster)), metrics_(metrics), pool_(threads) {}

HostTasks::~HostTasks() { Shutdown(); }

void HostTasks::Cluster(Kind kind, int windows,
                        std::function<std::optional<ClusterInput>()> gather,
                        std::function<void(ClusterOutcome)> done) {
  auto task = [this, kind, gather = std::move(gather), done = std::move(done)] {
    std::optional<ClusterInput> input = gather();
    if (!input.has_value()) return;
    const absl::Time start = absl::Now();
    ClusterOutcome out{
        cluster_(input->segmentations, input->embeddings, input->num_windows,
                 input->config, input->hints),
        {},
        absl::Now()};
    metrics_->ObserveStageSeconds(
        kind == Kind::kFinal ? Stage::kClustering : Stage::kPartialClustering,
        absl::ToDoubleSeconds(out.end - start));
    out.input = *std::move(input);
    done(std::move(out));
  };
  pool_.Post({static_cast<int>(kind), windows}, std::move(task));
}

void HostTasks::Maintain(std::function<void()> task) {
  pool_.Post({static_cast<int>(Kind::kMaintenance), 0}, std::move(task));
}

}  // namespace diarization::runtime::internal
