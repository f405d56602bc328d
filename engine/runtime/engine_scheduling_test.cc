// Engine tests. How the device workers schedule windows: batches mix jobs
// round-robin, a long job does not hold back a short one, the embedding stage
// keeps up with segmentation, the stages overlap on their own threads, and jobs
// go to the least-loaded device. The rig (fake networks, the independent
// computation, the engine on them) is engine_test_rig.h.
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
using testing::ExpectMatches;
using testing::FakeControl;
using testing::kConcurrentStages;
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;

TEST(EngineTest, BatchesMixWindowsOfSeveralJobs) {
  EngineOptions options;
  options.segmentation_batch_size = 32;  // the batches counted below
  options.max_batch_wait = absl::Milliseconds(200);
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  // Hold the device inside a first batch so the others queue up together.
  control.SetGate(false);
  Outcome first;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(kWin), first.Callbacks())
          .ok());
  control.WaitEntered(1);
  // 16 jobs of 3 windows each: 48 windows, at most 3 from any one job.
  std::vector<std::unique_ptr<Outcome>> outs;
  std::vector<std::vector<float>> audios;
  for (int i = 0; i < 16; ++i) {
    audios.push_back(RandomAudio(kWin + 32000));
    outs.push_back(std::make_unique<Outcome>());
    ASSERT_TRUE(rig.engine
                    ->Submit(JobOptions{}, std::vector<float>(audios.back()),
                             outs.back()->Callbacks())
                    .ok());
  }
  control.SetGate(true);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(outs[i]->Wait());
    auto r = outs[i]->result();
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectMatches(*r, Compute(audios[i], 16000), "job " + std::to_string(i));
  }
  const std::vector<int> seg = control.segmentation_batches();
  const std::vector<int> emb = control.embedding_batches();
  // After the held batch of 1: a full batch of 32 and one of 16.
  EXPECT_EQ(*std::max_element(seg.begin(), seg.end()), 32);
  EXPECT_EQ(*std::max_element(emb.begin(), emb.end()), 32);
  int total = 0;
  for (int b : seg) total += b;
  EXPECT_EQ(total, 1 + 48);
  // The same, read back from the batch-size histogram.
  EXPECT_EQ(MetricValue(*rig.registry, "diarization_batch_size",
                        {{"model", "segmentation"}}, "sum"),
            49.0);
  EXPECT_EQ(MetricValue(*rig.registry, "diarization_batch_size",
                        {{"model", "segmentation"}}, "count"),
            static_cast<double>(seg.size()));
}

TEST(EngineTest, ALongFileDoesNotHoldBackOtherJobs) {
  EngineOptions options;
  options.segmentation_batch_size = 8;
  options.embedding_batch_size = 8;
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);
  Outcome blocker, big, small;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(kWin), blocker.Callbacks())
          .ok());
  control.WaitEntered(1);
  // 100 windows queued first, then one window whose first sample is a
  // marker the fake records.
  ASSERT_TRUE(rig.engine
                  ->Submit(JobOptions{}, RandomAudio(kWin + 16000 * 99),
                           big.Callbacks())
                  .ok());
  constexpr float kMarker = 0.123456f;
  std::vector<float> marked = RandomAudio(kWin);
  marked[0] = kMarker;
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(marked), small.Callbacks())
          .ok());
  control.SetGate(true);
  for (Outcome* o : {&blocker, &big, &small}) ASSERT_TRUE(o->Wait());
  ASSERT_TRUE(small.result().ok());
  ExpectMatches(*small.result(), Compute(marked, 16000), "small job");
  // Batch 0 held the blocker; round-robin puts the small job's window in
  // the very next batch, not after the long file's 100 windows (batch 13).
  const auto firsts = control.segmentation_first_samples();
  int marker_batch = -1;
  for (size_t b = 0; b < firsts.size(); ++b) {
    for (float x : firsts[b]) {
      if (x == kMarker) marker_batch = static_cast<int>(b);
    }
  }
  EXPECT_EQ(marker_batch, 1);
}

// Index of the first batch in `log` (of the given stage) holding a window
// whose first sample is `marker`; -1 if none.
int BatchWithMarker(const std::vector<FakeControl::Batch>& log,
                    bool segmentation, float marker) {
  for (size_t b = 0; b < log.size(); ++b) {
    if (log[b].segmentation != segmentation) continue;
    for (float x : log[b].first_samples) {
      if (x == marker) return static_cast<int>(b);
    }
  }
  return -1;
}

int SegmentationBatchesBefore(const std::vector<FakeControl::Batch>& log,
                              int index) {
  int n = 0;
  for (int b = 0; b < index; ++b) n += log[b].segmentation;
  return n;
}

// Issue 13: a long job's windows, all queued at one instant, used to keep
// the device on segmentation until every one of them was segmented, so no
// other job's embeddings (and no result) came before. The short job behind
// it must now finish within a few batches, and before the long job.
TEST(EngineTest, AShortJobBehindALongOneCompletesWithinAFewBatches) {
  for (bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "short job streamed" : "short job submitted");
    EngineOptions options;
    options.segmentation_batch_size = 8;
    options.embedding_batch_size = 8;
    Rig rig = MakeRig(options);
    FakeControl& control = *rig.controls[0];
    control.SetDelay(absl::Milliseconds(2));
    control.SetGate(false);
    Outcome blocker, big, small;
    // Completion order of the two jobs.
    std::atomic<int> order{0};
    std::atomic<int> small_place{-1}, big_place{-1};
    auto ordered = [&order](JobCallbacks cb, std::atomic<int>* place) {
      cb.on_complete = [&order, place,
                        inner = cb.on_complete](absl::StatusOr<JobResult> r) {
        *place = order++;
        inner(std::move(r));
      };
      return cb;
    };
    ASSERT_TRUE(
        rig.engine->Submit(JobOptions{}, RandomAudio(kWin), blocker.Callbacks())
            .ok());
    control.WaitEntered(1);
    // 200 windows queued at once, then a 5 s job marked by its first sample.
    ASSERT_TRUE(rig.engine
                    ->Submit(JobOptions{}, RandomAudio(kWin + 16000 * 199),
                             ordered(big.Callbacks(), &big_place))
                    .ok());
    constexpr float kMarker = 0.123456f;
    std::vector<float> marked = RandomAudio(16000 * 5);
    marked[0] = kMarker;
    const JobCallbacks small_cb = ordered(small.Callbacks(), &small_place);
    std::unique_ptr<Job> stream;
    if (streamed) {
      auto handle = rig.engine->StartJob(JobOptions{}, small_cb);
      ASSERT_TRUE(handle.ok());
      stream = *std::move(handle);
      ASSERT_TRUE(stream->Append(marked).ok());
      ASSERT_TRUE(stream->Finish().ok());
    } else {
      ASSERT_TRUE(
          rig.engine->Submit(JobOptions{}, std::vector<float>(marked), small_cb)
              .ok());
    }
    control.SetGate(true);
    for (Outcome* o : {&blocker, &big, &small}) ASSERT_TRUE(o->Wait());
    ASSERT_TRUE(small.result().ok());
    ExpectMatches(*small.result(), Compute(marked, 16000), "small job");
    ASSERT_TRUE(big.result().ok());

    const auto log = control.batch_log();
    const int seg = BatchWithMarker(log, /*segmentation=*/true, kMarker);
    const int emb = BatchWithMarker(log, /*segmentation=*/false, kMarker);
    ASSERT_GE(seg, 0);
    ASSERT_GE(emb, 0);
    // Segmented in the batch after the blocker's (round-robin) ...
    EXPECT_EQ(SegmentationBatchesBefore(log, seg), 1);
    // ... and embedded right after it: before the next segmentation batch
    // or the one after (with the stages on two threads, segmentation runs
    // on until two embedding batches are queued) — not after the long
    // job's 25 segmentation batches.
    EXPECT_LE(SegmentationBatchesBefore(log, emb), kConcurrentStages ? 5 : 3);
    EXPECT_LT(small_place.load(), big_place.load());
  }
}

// Runs one long job of `windows` windows through a fresh rig (each batch
// sleeps `delay`) and returns, from the batch log, how many windows were
// segmented and not yet embedded when each segmentation batch entered the
// model: the embedding stage's work in hand at that moment.
std::vector<int> BacklogAtEachSegmentationBatch(const EngineOptions& options,
                                                int windows,
                                                absl::Duration delay) {
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  control.SetDelay(delay);
  Outcome long_job;
  const std::vector<float> audio = RandomAudio(kWin + 16000 * (windows - 1));
  EXPECT_TRUE(rig.engine
                  ->Submit(JobOptions{}, std::vector<float>(audio),
                           long_job.Callbacks())
                  .ok());
  EXPECT_TRUE(long_job.Wait());
  EXPECT_TRUE(long_job.result().ok());
  if (long_job.result().ok()) {
    ExpectMatches(*long_job.result(), Compute(audio, 16000), "long job");
  }
  std::vector<int> backlog;
  int segmented = 0, embedded = 0;
  for (const FakeControl::Batch& b : control.batch_log()) {
    const int n = static_cast<int>(b.first_samples.size());
    if (b.segmentation) {
      backlog.push_back(segmented - embedded);
      segmented += n;
    } else {
      embedded += n;
    }
  }
  EXPECT_EQ(segmented, windows);
  EXPECT_EQ(embedded, windows);
  return backlog;
}

// The embedding stage stays within one batch (two with the stages on their
// own threads) of the segmentation stage for a long job.
TEST(EngineTest, TheEmbeddingStageIsNotStarved) {
  EngineOptions options;
  options.segmentation_batch_size = 8;
  options.embedding_batch_size = 8;
  const std::vector<int> backlog =
      BacklogAtEachSegmentationBatch(options, 200, absl::Milliseconds(1));
  const int bound = kConcurrentStages ? 3 * options.embedding_batch_size
                                      : options.embedding_batch_size;
  ASSERT_FALSE(backlog.empty());
  EXPECT_LE(*std::max_element(backlog.begin(), backlog.end()), bound);
}

// With a segmentation batch larger than the embedding batch (the CUDA
// defaults are 128 and 32), segmentation runs ahead by a whole batch of its
// own, so the embedding thread is not left waiting for each segmentation
// batch. Before, segmentation was held at two embedding batches: each of its
// batches then started with at most 15 windows (here) left for the
// embedding thread, which ran dry while it waited, and the stages took turns
// (0 left, at some batch, in the runs that showed it).
TEST(EngineTest, SegmentationRunsAheadByAWholeBatch) {
  EngineOptions options;
  options.segmentation_batch_size = 64;
  options.embedding_batch_size = 8;
  std::vector<int> backlog =
      BacklogAtEachSegmentationBatch(options, 400, absl::Milliseconds(20));
  ASSERT_EQ(backlog.size(), 7u);
  backlog.erase(backlog.begin());  // nothing is segmented before the first
  const auto [fewest, most] =
      std::minmax_element(backlog.begin(), backlog.end());
  if (kConcurrentStages) {
    // Held until fewer than 64 + 8 are queued, so at least 64 are queued
    // when segmentation goes on. Until its batch enters the model (its
    // windows are copied first) the embedding thread may enter more of its
    // 20 ms batches: the bound leaves room for six of them. The old rule let
    // segmentation go on with at most 15 queued.
    EXPECT_GE(*fewest, 2 * options.embedding_batch_size);
    EXPECT_LE(*most,
              options.segmentation_batch_size + options.embedding_batch_size);
  } else {
    // One thread: the embedding queue is emptied before segmentation runs.
    EXPECT_EQ(*most, 0);
  }
}

TEST(EngineTest, ConcurrentStagesOverlapSegmentationWithEmbedding) {
  Rig rig = MakeRig(EngineOptions{});
  FakeControl& control = *rig.controls[0];
  control.SetEmbeddingGate(false);
  Outcome a, b;
  const std::vector<float> audio_a = RandomAudio(kWin);
  const std::vector<float> audio_b = RandomAudio(kWin + 7);
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(audio_a), a.Callbacks())
          .ok());
  control.WaitEntered(2);  // a's segmentation done, a's embedding held
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(audio_b), b.Callbacks())
          .ok());
  // b's segmentation runs while a's embedding batch is still inside the
  // model only when the stages have their own threads.
  EXPECT_EQ(control.WaitEnteredFor(3, absl::Seconds(1)), kConcurrentStages);
  control.SetEmbeddingGate(true);
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  ExpectMatches(*a.result(), Compute(audio_a, 16000), "a");
  ExpectMatches(*b.result(), Compute(audio_b, 16000), "b");
}

TEST(EngineTest, DispatchGoesToTheLeastLoadedDevice) {
  Rig rig = MakeRig(EngineOptions{}, /*num_devices=*/2);
  for (auto& c : rig.controls) c->SetGate(false);
  Outcome a, b, c, d;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(16000 * 30), a.Callbacks())
          .ok());  // both idle: device 0
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(16000 * 12), b.Callbacks())
          .ok());  // 0 has 30 s: device 1
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(16000 * 10), c.Callbacks())
          .ok());  // 30 vs 12: device 1
  auto stream = rig.engine->StartJob(JobOptions{}, d.Callbacks());
  ASSERT_TRUE(stream.ok());  // 30 vs 22: device 1
  EXPECT_EQ((*stream)->device(), "fake:1");
  auto devices = rig.engine->Devices();
  EXPECT_EQ(devices[0].active_jobs, 1);
  EXPECT_EQ(devices[1].active_jobs, 3);
  EXPECT_NEAR(devices[0].backlog_audio_s, 30.0, 1e-9);
  EXPECT_NEAR(devices[1].backlog_audio_s, 22.0, 1e-9);
  (*stream)->Cancel();
  for (auto& ctl : rig.controls) ctl->SetGate(true);
  for (Outcome* o : {&a, &b, &c}) ASSERT_TRUE(o->Wait());
  EXPECT_EQ(a.result()->device, "fake:0");
  EXPECT_EQ(b.result()->device, "fake:1");
  EXPECT_EQ(c.result()->device, "fake:1");
}

}  // namespace
}  // namespace diarization::runtime
