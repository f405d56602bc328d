// HostTasks: the order of queued host work (finals, then partials, then
// maintenance; fewer windows first), gathering on the host thread, the skip
// when a gather has nothing to do, the thread kept from provisional
// clusterings, and the load each task found.
#include "engine/runtime/host_tasks.h"

#include <algorithm>
#include <atomic>
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

// With T threads at most T - 1 provisional clusterings are in the pool, so a
// final clustering that comes while provisional ones are stuck runs at once;
// the held-back ones run later, none lost. On the code before the rule both
// threads took a provisional clustering and the final waited.
TEST(HostTasksTest, AFinalFindsAThreadWhileProvisionalOnesFillThePool) {
  auto metrics = TestMetrics();
  absl::Mutex mu;
  int partials_in = 0, partials_now = 0, partials_most = 0;
  bool open = false;
  // Provisional inputs have 10+ windows; they block until `open`.
  ClusterFunction cluster =
      [&](std::span<const float>, std::span<const float>, int num_windows,
          const pipeline::PipelineConfig&, const pipeline::SpeakerHints&)
      -> absl::StatusOr<pipeline::DiarizationOutput> {
    if (num_windows >= 10) {
      absl::MutexLock lock(&mu);
      ++partials_in;
      partials_most = std::max(partials_most, ++partials_now);
      mu.Await(absl::Condition(&open));
      --partials_now;
    }
    return pipeline::DiarizationOutput{};
  };
  HostTasks host(/*threads=*/2, cluster, metrics.get());
  std::atomic<int> partials_done{0};
  absl::Notification final_done;
  for (int i = 0; i < 3; ++i) {
    host.Cluster(
        HostTasks::Kind::kPartial, 10 + i,
        [i] { return std::optional<ClusterInput>(Input(10 + i)); },
        [&](ClusterOutcome) { ++partials_done; });
  }
  {
    // Give every thread time to take a provisional clustering (the old
    // code's two would both be in by now).
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(
                            +[](int* n) { return *n >= 2; }, &partials_in),
                        absl::Milliseconds(500));
  }
  const HostLoad load = host.Cluster(
      HostTasks::Kind::kFinal, 3,
      [] { return std::optional<ClusterInput>(Input(3)); },
      [&](ClusterOutcome out) {
        EXPECT_TRUE(out.output.ok());
        final_done.Notify();
      });
  EXPECT_EQ(load.partials_running, 1);
  EXPECT_EQ(load.finals_running, 0);
  EXPECT_EQ(load.finals_queued, 0);
  EXPECT_TRUE(final_done.WaitForNotificationWithTimeout(absl::Seconds(5)))
      << "the final clustering waited for the provisional ones";
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(partials_in, 1);
    open = true;
  }
  host.Shutdown();
  EXPECT_EQ(partials_done.load(), 3);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(partials_in, 3);
  EXPECT_EQ(partials_most, 1);
}

// Cluster reports the pool as it was just before the task was queued.
TEST(HostTasksTest, ClusterReportsTheLoadItFound) {
  auto metrics = TestMetrics();
  absl::Notification release;
  std::atomic<int> in{0};
  ClusterFunction cluster = [&](std::span<const float>, std::span<const float>,
                                int, const pipeline::PipelineConfig&,
                                const pipeline::SpeakerHints&)
      -> absl::StatusOr<pipeline::DiarizationOutput> {
    ++in;
    release.WaitForNotification();
    return pipeline::DiarizationOutput{};
  };
  HostTasks host(/*threads=*/3, cluster, metrics.get());
  auto post = [&](HostTasks::Kind kind) {
    return host.Cluster(
        kind, 4, [] { return std::optional<ClusterInput>(Input(4)); },
        [](ClusterOutcome) {});
  };
  EXPECT_EQ(post(HostTasks::Kind::kFinal).finals_running, 0);
  post(HostTasks::Kind::kPartial);
  while (in.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  post(HostTasks::Kind::kFinal);  // the third thread
  while (in.load() < 3) absl::SleepFor(absl::Milliseconds(1));
  post(HostTasks::Kind::kFinal);  // waits
  const HostLoad load = post(HostTasks::Kind::kFinal);
  EXPECT_EQ(load.finals_running, 2);
  EXPECT_EQ(load.partials_running, 1);
  EXPECT_EQ(load.finals_queued, 1);
  release.Notify();
  host.Shutdown();
  EXPECT_EQ(in.load(), 5);
}

}  // namespace
}  // namespace diarization::runtime::internal
