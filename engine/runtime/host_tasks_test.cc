// HostTasks: the order of queued host work (finals, then partials, then
// maintenance; fewer windows first), gathering on the host thread, and the
// skip when a gather has nothing to do.
#include "engine/runtime/host_tasks.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace diarization::runtime::internal {
namespace {

struct Recorder {
  absl::Mutex mu;
  std::vector<std::string> order;
  void Add(std::string what) {
    absl::MutexLock lock(&mu);
    order.push_back(std::move(what));
  }
};

std::shared_ptr<Metrics> TestMetrics() {
  auto m = Metrics::Create(std::make_shared<prometheus::Registry>(),
                           BuildInfo{"test", "test"});
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

ClusterInput Input(int windows) {
  ClusterInput in;
  in.num_windows = windows;
  in.segmentations.assign(size_t(windows) * kFramesPerWindow * kLocalSpeakers,
                          0.0f);
  in.embeddings.assign(size_t(windows) * kLocalSpeakers * kEmbeddingDim, 0.0f);
  return in;
}

TEST(HostTasksTest, FinalsFirstThenPartialsThenMaintenanceFewerWindowsFirst) {
  auto metrics = TestMetrics();
  Recorder rec;
  absl::Notification release, blocked;
  // The cluster function names its input by its window count.
  ClusterFunction cluster =
      [&](std::span<const float>, std::span<const float>, int num_windows,
          const pipeline::PipelineConfig&, const pipeline::SpeakerHints&)
      -> absl::StatusOr<pipeline::DiarizationOutput> {
    if (num_windows == 1) {
      blocked.Notify();
      release.WaitForNotification();
    }
    return pipeline::DiarizationOutput{};
  };
  HostTasks host(/*threads=*/1, cluster, metrics.get());
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> gathered_on_caller{false};
  auto submit = [&](HostTasks::Kind kind, int windows, std::string name) {
    host.Cluster(
        kind, windows,
        [&, windows]() -> std::optional<ClusterInput> {
          gathered_on_caller =
              gathered_on_caller.load() || std::this_thread::get_id() == caller;
          return Input(windows);
        },
        [&rec, name](ClusterOutcome out) {
          EXPECT_TRUE(out.output.ok());
          rec.Add(name);
        });
  };
  submit(HostTasks::Kind::kFinal, 1, "blocker");
  blocked.WaitForNotification();  // the only thread is busy now
  host.Maintain([&] { rec.Add("trim"); });
  submit(HostTasks::Kind::kPartial, 10, "partial-10");
  submit(HostTasks::Kind::kFinal, 100, "final-100");
  submit(HostTasks::Kind::kPartial, 3, "partial-3");
  submit(HostTasks::Kind::kFinal, 5, "final-5");
  // Nothing to gather (the job ended): neither clustered nor reported.
  host.Cluster(
      HostTasks::Kind::kFinal, 2, [] { return std::optional<ClusterInput>(); },
      [&rec](ClusterOutcome) { rec.Add("skipped"); });
  release.Notify();
  host.Shutdown();
  EXPECT_FALSE(gathered_on_caller.load());
  absl::MutexLock lock(&rec.mu);
  EXPECT_EQ(rec.order,
            (std::vector<std::string>{"blocker", "final-5", "final-100",
                                      "partial-3", "partial-10", "trim"}));
}

TEST(HostTasksTest, ShutdownRunsWhatTasksPost) {
  auto metrics = TestMetrics();
  ClusterFunction cluster = [](std::span<const float>, std::span<const float>,
                               int, const pipeline::PipelineConfig&,
                               const pipeline::SpeakerHints&)
      -> absl::StatusOr<pipeline::DiarizationOutput> {
    return absl::InternalError("no clustering here");
  };
  HostTasks host(2, cluster, metrics.get());
  std::atomic<int> done{0};
  host.Cluster(
      HostTasks::Kind::kPartial, 4,
      [] { return std::optional<ClusterInput>(Input(4)); },
      [&](ClusterOutcome out) {
        EXPECT_EQ(out.output.status().code(), absl::StatusCode::kInternal);
        EXPECT_EQ(out.input.num_windows, 4);  // handed back
        host.Maintain([&] { ++done; });
        ++done;
      });
  host.Shutdown();
  EXPECT_EQ(done.load(), 2);
  host.Shutdown();  // idempotent
}

}  // namespace
}  // namespace diarization::runtime::internal
