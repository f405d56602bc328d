#include "engine/runtime/host_tasks.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "engine/common/openblas_threads.h"

namespace diarization::runtime::internal {

void SetClusteringBlasThreads(int threads) {
  openblas_set_num_threads(threads);
}

HostTasks::HostTasks(int threads, ClusterFunction cluster, Metrics* metrics)
    : cluster_(std::move(cluster)),
      metrics_(metrics),
      max_partials_in_pool_(threads >= 2 ? threads - 1
                                         : std::numeric_limits<int>::max()),
      pool_(threads) {}

HostTasks::~HostTasks() { Shutdown(); }

HostLoad HostTasks::Cluster(Kind kind, int windows,
                            std::function<std::optional<ClusterInput>()> gather,
                            std::function<void(ClusterOutcome)> done) {
  const int k = static_cast<int>(kind);
  HostLoad load;
  {
    absl::MutexLock lock(&load_mu_);
    load.finals_running = running_[0];
    load.partials_running = running_[1];
    load.finals_queued = queued_[0];
    ++queued_[k];
  }
  auto task = [this, k, kind, gather = std::move(gather),
               done = std::move(done)] {
    {
      absl::MutexLock lock(&load_mu_);
      --queued_[k];
      ++running_[k];
    }
    // Whatever way the task ends: it stops counting, and a provisional one
    // lets the next held-back one into the pool.
    struct Finished {
      HostTasks* self;
      int k;
      ~Finished() { self->TaskEnded(k); }
    } finished{this, k};
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
  if (kind == Kind::kPartial) {
    absl::MutexLock lock(&load_mu_);
    if (partials_in_pool_ >= max_partials_in_pool_) {
      held_partials_.emplace(std::make_pair(windows, arrivals_++),
                             std::move(task));
      return load;
    }
    ++partials_in_pool_;
  }
  pool_.Post({k, windows}, std::move(task));
  return load;
}

void HostTasks::TaskEnded(int kind) {
  std::function<void()> next;
  int next_windows = 0;
  {
    absl::MutexLock lock(&load_mu_);
    --running_[kind];
    if (kind != static_cast<int>(Kind::kPartial)) return;
    if (held_partials_.empty()) {
      --partials_in_pool_;
      return;
    }
    // The slot passes to the held-back task of fewest windows.
    auto first = held_partials_.begin();
    next_windows = first->first.first;
    next = std::move(first->second);
    held_partials_.erase(first);
  }
  pool_.Post({static_cast<int>(Kind::kPartial), next_windows}, std::move(next));
}

void HostTasks::Maintain(std::function<void()> task) {
  pool_.Post({static_cast<int>(Kind::kMaintenance), 0}, std::move(task));
}

}  // namespace diarization::runtime::internal
