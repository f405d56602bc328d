// Internal: the host side of the engine — clustering (final and
// provisional) and memory maintenance on a ThreadPool (thread_pool.h), whose
// priorities give the order below.
//
// Tasks take their inputs by value and hand their results to a
// continuation (on the host thread that ran them); they never touch job
// state themselves, so the engine alone decides what a result means for
// its job. Order: final clusterings first, then provisional ones, then
// maintenance; within a kind the task of fewer windows first (shortest job
// first: a short job's result is not queued behind a long job's
// clustering), then arrival order.
//
// One thread is kept from provisional clusterings: with T >= 2 threads at
// most T - 1 run (or wait in the pool) at once, and the others wait here,
// fewer windows first, until one of those ends. A final clustering that
// comes while provisional ones fill the pool therefore finds a thread at
// once (it waits only for other finals), instead of waiting for a
// provisional clustering to end; partial results lose at most one thread's
// share. With one thread nothing is kept back.
#ifndef DIARIZATION_ENGINE_RUNTIME_HOST_TASKS_H_
#define DIARIZATION_ENGINE_RUNTIME_HOST_TASKS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/cluster_input.h"
#include "engine/runtime/engine_options.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime::internal {

// The host pool at one moment: clusterings running, by kind, and final
// clusterings waiting for a thread.
struct HostLoad {
  int finals_running = 0;
  int partials_running = 0;
  int finals_queued = 0;
};

struct ClusterOutcome {
  absl::StatusOr<pipeline::DiarizationOutput> output;
  // The input, handed back (JobOptions::return_intermediates).
  ClusterInput input;
  absl::Time end;
};

// Sets the BLAS library's threads per call (OpenBLAS; process-wide), for
// EngineOptions::clustering_blas_threads > 0.
void SetClusteringBlasThreads(int threads);

// Thread-safe.
class HostTasks {
 public:
  enum class Kind { kFinal = 0, kPartial = 1, kMaintenance = 2 };

  HostTasks(int threads, ClusterFunction cluster, Metrics* metrics);
  // Shutdown().
  ~HostTasks();

  HostTasks(const HostTasks&) = delete;
  HostTasks& operator=(const HostTasks&) = delete;

  // On a host thread: `gather` collects the input (nullopt: nothing to do
  // any more, e.g. the job ended), the cluster function runs on it (kFinal
  // or kPartial, `windows` orders the queue), the stage time is recorded,
  // and `done` gets the outcome. Gathering here, not in the caller, keeps
  // the copy of a long job's outputs off the device worker threads.
  // Returns the pool's load just before this task was queued.
  HostLoad Cluster(Kind kind, int windows,
                   std::function<std::optional<ClusterInput>()> gather,
                   std::function<void(ClusterOutcome)> done);
  // Runs `task` after every clustering queued in the pool (kMaintenance;
  // provisional ones held back may run after it).
  void Maintain(std::function<void()> task);

  // Runs everything queued (including what tasks post), then joins.
  // Idempotent; not from a host thread.
  void Shutdown() { pool_.Shutdown(); }

 private:
  // A clustering task of `kind` ended (ran or had nothing to gather).
  void TaskEnded(int kind);

  const ClusterFunction cluster_;
  Metrics* const metrics_;
  // Provisional clusterings in the pool (queued or running) at most.
  const int max_partials_in_pool_;
  // Clustering tasks queued (in the pool or held back) and running, by Kind
  // (kFinal, kPartial); the provisional ones in the pool and those held
  // back, by (windows, arrival). A leaf lock: the pool is posted to after it
  // is released.
  absl::Mutex load_mu_;
  int queued_[2] ABSL_GUARDED_BY(load_mu_) = {0, 0};
  int running_[2] ABSL_GUARDED_BY(load_mu_) = {0, 0};
  int partials_in_pool_ ABSL_GUARDED_BY(load_mu_) = 0;
  uint64_t arrivals_ ABSL_GUARDED_BY(load_mu_) = 0;
  std::map<std::pair<int, uint64_t>, std::function<void()>> held_partials_
      ABSL_GUARDED_BY(load_mu_);
  // Priority (kind, windows): the smallest runs first, then arrival order.
  ThreadPool pool_;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_HOST_TASKS_H_
