// Engine tests. The metrics the engine records: GPU seconds per stage, the
// worker threads' states, the job, backlog and latency families, and the device
// info metric. The rig (fake networks, the independent computation, the engine
// on them) is engine_test_rig.h.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/io/plda_files.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/engine_test_rig.h"
#include "engine/runtime/fake_models.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "testing/metric_value.h"
#include "testing/test_data.h"

namespace diarization::runtime {
namespace {

using ::diarization::testing::MetricValue;
using testing::Compute;
using testing::Eventually;
using testing::ExpectMatches;
using testing::FakeControl;
using testing::kConcurrentStages;
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;

// diarization_device_gpu_seconds_total adds up what the device's GPU-time
// hooks report, per stage, each batch once: the fake device's "GPU" spends
// a fixed time per segmentation batch and another per embedding batch (both
// drawn per run, so the test cannot pass on fixed numbers), and the hooks
// are read on the worker threads, never on the caller's.
TEST(EngineTest, GpuSecondsCounterAddsEachBatchOnce) {
  std::mt19937 rng(std::random_device{}());
  const double seg_cost = std::uniform_real_distribution<>(0.1, 1.0)(rng);
  const double emb_cost = std::uniform_real_distribution<>(0.1, 1.0)(rng);
  const std::thread::id test_thread = std::this_thread::get_id();
  std::atomic<int> read_on_test_thread{0};
  EngineOptions options;
  options.segmentation_batch_size = 8;
  options.embedding_batch_size = 4;
  Rig rig =
      MakeRig(options, 1, nullptr, nullptr,
              [&](Device& d, std::shared_ptr<FakeControl> control) {
                d.segmentation_gpu_seconds = [&, control] {
                  if (std::this_thread::get_id() == test_thread)
                    ++read_on_test_thread;
                  return seg_cost * control->segmentation_batches().size();
                };
                d.embedding_gpu_seconds = [&, control] {
                  if (std::this_thread::get_id() == test_thread)
                    ++read_on_test_thread;
                  return emb_cost * control->embedding_batches().size();
                };
              });
  Outcome job;
  const std::vector<float> audio = RandomAudio(kWin + 16000 * 29);  // 30
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(audio), job.Callbacks())
          .ok());
  ASSERT_TRUE(job.Wait());
  FakeControl& control = *rig.controls[0];
  const size_t seg_batches = control.segmentation_batches().size();
  const size_t emb_batches = control.embedding_batches().size();
  ASSERT_GE(seg_batches, 4u);  // 30 windows in batches of at most 8
  ASSERT_GE(emb_batches, 8u);  // and of at most 4
  auto gpu = [&](const std::string& stage) {
    return MetricValue(*rig.registry, "diarization_device_gpu_seconds_total",
                       {{"device", "fake:0"}, {"stage", stage}});
  };
  EXPECT_NEAR(gpu("segmentation"), seg_cost * seg_batches, 1e-9);
  EXPECT_NEAR(gpu("embedding"), emb_cost * emb_batches, 1e-9);
  EXPECT_EQ(read_on_test_thread.load(), 0);

  // A device without the hooks (the CPU) exports no GPU time.
  Rig plain = MakeRig(options);
  Outcome other;
  ASSERT_TRUE(
      plain.engine
          ->Submit(JobOptions{}, std::vector<float>(audio), other.Callbacks())
          .ok());
  ASSERT_TRUE(other.Wait());
  EXPECT_EQ(
      MetricValue(*plain.registry, "diarization_device_gpu_seconds_total", {}),
      0.0);
}

// diarization_device_worker_seconds_total says what each worker thread did:
// starved while nothing was queued, filling while fewer windows than a batch
// waited for max_batch_wait, busy inside a batch, held (stages apart) while
// the embedding stage was behind; and a thread's states add up to its life.
TEST(EngineTest, WorkerStateCountersSayWhatTheThreadsDid) {
  EngineOptions options;
  options.segmentation_batch_size = 8;
  options.embedding_batch_size = 4;
  options.max_batch_wait = absl::Milliseconds(400);
  const absl::Time born = absl::Now();
  Rig rig = MakeRig(options);
  const absl::Time started = absl::Now();
  FakeControl& control = *rig.controls[0];
  const std::vector<std::string> threads =
      kConcurrentStages ? std::vector<std::string>{"segmentation", "embedding"}
                        : std::vector<std::string>{"both"};
  const std::string emb_thread = kConcurrentStages ? "embedding" : "both";
  auto seconds = [&](const std::string& thread, const std::string& state) {
    return MetricValue(
        *rig.registry, "diarization_device_worker_seconds_total",
        {{"device", "fake:0"}, {"thread", thread}, {"state", state}});
  };

  // Nothing queued: starved, and counted while it lasts (a waiting thread
  // wakes at least once a second).
  absl::SleepFor(absl::Milliseconds(1500));
  for (const std::string& t : threads) {
    EXPECT_GE(seconds(t, "starved"), 0.9) << t;
    EXPECT_EQ(seconds(t, "filling"), 0.0) << t;
    EXPECT_EQ(seconds(t, "busy"), 0.0) << t;
  }

  // One window, fewer than either batch: each stage waits max_batch_wait
  // for more before it runs it.
  Outcome one;
  const std::vector<float> audio_one = RandomAudio(kWin);
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(audio_one), one.Callbacks())
          .ok());
  ASSERT_TRUE(one.Wait());
  ExpectMatches(*one.result(), Compute(audio_one, 16000), "one window");
  if (kConcurrentStages) {
    EXPECT_GE(seconds("segmentation", "filling"), 0.35);
    EXPECT_GE(seconds("embedding", "filling"), 0.35);
  } else {
    EXPECT_GE(seconds("both", "filling"), 0.7);
  }

  // 40 windows with the embedding model gated shut: the embedding thread
  // sits inside its first batch; with the stages apart, segmentation is held
  // once a segmentation batch and an embedding batch (12 windows) wait for
  // embedding, with windows of its own still queued.
  control.SetEmbeddingGate(false);
  Outcome many;
  const std::vector<float> audio_many = RandomAudio(kWin + 16000 * 39);
  ASSERT_TRUE(rig.engine
                  ->Submit(JobOptions{}, std::vector<float>(audio_many),
                           many.Callbacks())
                  .ok());
  absl::SleepFor(absl::Milliseconds(800));
  const double held_while_gated =
      kConcurrentStages ? seconds("segmentation", "held") : 0.0;
  control.SetEmbeddingGate(true);
  ASSERT_TRUE(many.Wait());
  ExpectMatches(*many.result(), Compute(audio_many, 16000), "40 windows");
  EXPECT_GE(seconds(emb_thread, "busy"), 0.7);
  if (kConcurrentStages) {
    // Counted while held (the wake-ups every second at most), and in full
    // once the gate opened.
    EXPECT_GE(seconds("segmentation", "held"), 0.6);
    EXPECT_LE(held_while_gated, seconds("segmentation", "held"));
    EXPECT_EQ(seconds("embedding", "held"), 0.0);
  } else {
    EXPECT_EQ(seconds("both", "held"), 0.0);
  }

  // Every instant once: no more than the thread's life, and no less than it
  // minus the wait in progress (at most a second).
  absl::SleepFor(absl::Milliseconds(100));
  for (const std::string& t : threads) {
    double total = 0.0;
    for (const char* state : {"busy", "starved", "filling", "held"}) {
      total += seconds(t, state);
    }
    const absl::Time now = absl::Now();
    EXPECT_LE(total, absl::ToDoubleSeconds(now - born)) << t;
    EXPECT_GE(total, absl::ToDoubleSeconds(now - started) - 1.2) << t;
  }
}

TEST(EngineTest, MetricsFollowTheWork) {
  DeviceMemoryStats mem;
  mem.arena_reserved_bytes = 1 << 30;
  mem.arena_used_bytes = 12345;
  mem.device_total_bytes = 80ull << 30;
  EngineOptions options;
  options.max_batch_wait = absl::Milliseconds(300);
  Rig rig = MakeRig(options, 1, nullptr, [mem] { return mem; });
  prometheus::Registry& reg = *rig.registry;
  EXPECT_EQ(MetricValue(reg, "diarization_build_info",
                        {{"version", "1.2.3"}, {"commit", "abc123"}}),
            1.0);
  const double audio_before =
      MetricValue(reg, "diarization_audio_seconds_total", {});
  EXPECT_EQ(audio_before, 0.0);

  Outcome out;
  auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ(MetricValue(reg, "diarization_active_streams", {}), 1.0);
  EXPECT_EQ(MetricValue(reg, "diarization_active_jobs", {{"device", "fake:0"}}),
            1.0);
  // 5 full windows wait (batch wait 300 ms) in the segmentation queue.
  ASSERT_TRUE((*handle)->Append(RandomAudio(kWin + 16000 * 4)).ok());
  EXPECT_NEAR(MetricValue(reg, "diarization_backlog_audio_seconds", {}), 14.0,
              1e-9);
  EXPECT_EQ(MetricValue(reg, "diarization_queue_depth",
                        {{"device", "fake:0"}, {"queue", "segmentation"}}),
            5.0);
  ASSERT_TRUE((*handle)->Finish().ok());
  ASSERT_TRUE(out.Wait());
  ASSERT_TRUE(out.result().ok());
  // The gauges are updated just after the callback.
  EXPECT_TRUE(Eventually([&] {
    return MetricValue(reg, "diarization_active_jobs",
                       {{"device", "fake:0"}}) == 0.0 &&
           MetricValue(reg, "diarization_backlog_audio_seconds", {}) == 0.0 &&
           MetricValue(reg, "diarization_active_streams", {}) == 0.0;
  }));

  EXPECT_NEAR(MetricValue(reg, "diarization_audio_seconds_total",
                          {{"device", "fake:0"}}),
              14.0, 1e-9);
  EXPECT_EQ(MetricValue(reg, "diarization_jobs_total", {{"code", "OK"}}), 1.0);
  EXPECT_EQ(MetricValue(reg, "diarization_request_rtfx", {}, "count"), 1.0);
  EXPECT_GT(MetricValue(reg, "diarization_request_rtfx", {}, "sum"), 0.0);
  EXPECT_EQ(MetricValue(reg, "diarization_processing_seconds",
                        {{"stage", "clustering"}}, "count"),
            1.0);
  EXPECT_GE(MetricValue(reg, "diarization_processing_seconds",
                        {{"stage", "segmentation"}}, "count"),
            1.0);
  EXPECT_GE(MetricValue(reg, "diarization_queue_wait_seconds",
                        {{"queue", "embedding"}}, "count"),
            5.0);
  EXPECT_EQ(MetricValue(reg, "diarization_active_streams", {}), 0.0);
  EXPECT_EQ(MetricValue(reg, "diarization_active_jobs", {{"device", "fake:0"}}),
            0.0);
  EXPECT_EQ(MetricValue(reg, "diarization_backlog_audio_seconds", {}), 0.0);
  rig.engine->Devices();  // refreshes the memory and RTFx gauges
  EXPECT_GT(MetricValue(reg, "diarization_device_rtfx", {{"device", "fake:0"}}),
            0.0);
  EXPECT_EQ(MetricValue(reg, "diarization_device_memory_bytes",
                        {{"device", "fake:0"}, {"kind", "arena_used"}}),
            12345.0);
  EXPECT_EQ(MetricValue(reg, "diarization_device_memory_bytes",
                        {{"device", "fake:0"}, {"kind", "device_total"}}),
            static_cast<double>(80ull << 30));
  rig.metrics->RecordRequest("DiarizeFile", absl::StatusCode::kOk);
  rig.metrics->RecordRequest("DiarizeFile", absl::StatusCode::kOk);
  rig.metrics->RecordRequest("Diarize", absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(MetricValue(reg, "diarization_requests_total",
                        {{"method", "DiarizeFile"}, {"code", "OK"}}),
            2.0);
  EXPECT_EQ(
      MetricValue(reg, "diarization_requests_total",
                  {{"method", "Diarize"}, {"code", "RESOURCE_EXHAUSTED"}}),
      1.0);
}

TEST(EngineTest, DeviceInfoMetricNamesEachDeviceAndItsPrecisions) {
  Rig rig = MakeRig(EngineOptions{}, /*num_devices=*/2);
  prometheus::Registry& reg = *rig.registry;
  EXPECT_EQ(MetricValue(reg, "diarization_device_info",
                        {{"device", "fake:0"},
                         {"description", "fake device"},
                         {"segmentation_precision", "fp32"},
                         {"embedding_precision", "fp32"}}),
            1.0);
  EXPECT_EQ(MetricValue(reg, "diarization_device_info",
                        {{"device", "fake:1"},
                         {"segmentation_precision", "fp32"},
                         {"embedding_precision", "tf32"}}),
            1.0);
  // One series per device, nothing else.
  EXPECT_EQ(MetricValue(reg, "diarization_device_info", {}), 2.0);
}

}  // namespace
}  // namespace diarization::runtime
