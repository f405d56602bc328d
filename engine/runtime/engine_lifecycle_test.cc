// Engine tests. A job's life and the engine's: cancellation, a dropped handle,
// deadlines, the drain, a failing model, a cancel racing the completion, and
// the checks of job options and of Create's arguments. The rig (fake networks,
// the independent computation, the engine on them) is engine_test_rig.h.
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
using testing::EchoCluster;
using testing::Eventually;
using testing::ExpectMatches;
using testing::FakeControl;
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;
using testing::Rng;
using testing::rng_mu;

TEST(EngineTest, CancelDropsQueuedWindowsAtOnce) {
  Rig rig = MakeRig(EngineOptions{});
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);
  Outcome running;
  const std::vector<float> a = RandomAudio(kWin);
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, std::vector<float>(a), running.Callbacks())
          .ok());
  control.WaitEntered(1);  // window 0 of `running` is inside the model

  Outcome cancelled;
  auto handle = rig.engine->StartJob(JobOptions{}, cancelled.Callbacks());
  ASSERT_TRUE(handle.ok());
  const std::vector<float> b = RandomAudio(kWin + 16000 * 20);
  ASSERT_TRUE((*handle)->Append(b).ok());
  EXPECT_EQ(rig.engine->Devices()[0].segmentation_queue_depth, 21);
  EXPECT_NEAR(rig.engine->backlog_audio_s(), 10.0 + 30.0, 1e-9);

  (*handle)->Cancel();
  // Freed at once, before the device does anything more.
  EXPECT_EQ(rig.engine->Devices()[0].segmentation_queue_depth, 0);
  EXPECT_NEAR(rig.engine->backlog_audio_s(), 10.0, 1e-9);
  EXPECT_EQ(MetricValue(*rig.registry, "diarization_queue_depth",
                        {{"queue", "segmentation"}}),
            0.0);
  ASSERT_TRUE(cancelled.Wait());
  EXPECT_EQ(cancelled.result().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ((*handle)->Append(b).code(), absl::StatusCode::kCancelled);

  control.SetGate(true);
  ASSERT_TRUE(running.Wait());
  ASSERT_TRUE(running.result().ok());
  // The device only ever saw the first job's window.
  EXPECT_EQ(control.windows_seen(), 1);
  EXPECT_EQ(cancelled.completions(), 1);
}

TEST(EngineTest, DroppingAnUnfinishedHandleCancels) {
  Rig rig = MakeRig(EngineOptions{});
  Outcome out;
  {
    auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
    ASSERT_TRUE(handle.ok());
    ASSERT_TRUE((*handle)->Append(RandomAudio(5000)).ok());
  }
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.result().status().code(), absl::StatusCode::kCancelled);
}

TEST(EngineTest, DeadlinesFreeQueuedWork) {
  Rig rig = MakeRig(EngineOptions{});
  FakeControl& control = *rig.controls[0];
  JobOptions past;
  past.deadline = absl::Now() - absl::Seconds(1);
  Outcome never;
  EXPECT_EQ(rig.engine->Submit(past, RandomAudio(100), never.Callbacks())
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);

  control.SetGate(false);
  Outcome blocker;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(kWin), blocker.Callbacks())
          .ok());
  control.WaitEntered(1);
  JobOptions soon;
  soon.deadline = absl::Now() + absl::Milliseconds(150);
  Outcome late;
  const absl::Time start = absl::Now();
  ASSERT_TRUE(
      rig.engine->Submit(soon, RandomAudio(kWin + 16000 * 5), late.Callbacks())
          .ok());
  ASSERT_TRUE(late.Wait(absl::Seconds(10)));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(late.result().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(took, absl::Milliseconds(140));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(rig.engine->Devices()[0].segmentation_queue_depth, 0);
  control.SetGate(true);
  ASSERT_TRUE(blocker.Wait());
  EXPECT_TRUE(blocker.result().ok());
  EXPECT_EQ(control.windows_seen(), 1);
  EXPECT_EQ(never.completions(), 0);
}

TEST(EngineTest, DrainFinishesAcceptedJobsAndRejectsNewOnes) {
  Rig rig = MakeRig(EngineOptions{});
  rig.controls[0]->SetDelay(absl::Milliseconds(20));
  std::vector<std::unique_ptr<Outcome>> outs;
  std::vector<std::vector<float>> audios;
  for (int i = 0; i < 6; ++i) {
    audios.push_back(RandomAudio(kWin + 16000 * 40));
    outs.push_back(std::make_unique<Outcome>());
    ASSERT_TRUE(rig.engine
                    ->Submit(JobOptions{}, std::vector<float>(audios.back()),
                             outs.back()->Callbacks())
                    .ok());
  }
  // A stream that finishes during the drain.
  Outcome stream_out;
  auto handle = rig.engine->StartJob(JobOptions{}, stream_out.Callbacks());
  ASSERT_TRUE(handle.ok());
  const std::vector<float> stream_audio = RandomAudio(kWin + 5000);
  ASSERT_TRUE((*handle)->Append(stream_audio).ok());

  absl::Status drained;
  std::thread drainer(
      [&] { drained = rig.engine->Drain(absl::Now() + absl::Seconds(60)); });
  while (rig.engine->state() == EngineState::kServing) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  Outcome refused;
  EXPECT_EQ(
      rig.engine->Submit(JobOptions{}, RandomAudio(100), refused.Callbacks())
          .status()
          .code(),
      absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      rig.engine->StartJob(JobOptions{}, refused.Callbacks()).status().code(),
      absl::StatusCode::kUnavailable);
  ASSERT_TRUE((*handle)->Finish().ok());
  drainer.join();
  EXPECT_TRUE(drained.ok()) << drained;
  EXPECT_EQ(rig.engine->state(), EngineState::kStopped);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(outs[i]->completions(), 1);
    auto r = outs[i]->result();
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectMatches(*r, Compute(audios[i], 16000), "drained job");
  }
  ASSERT_EQ(stream_out.completions(), 1);
  ASSERT_TRUE(stream_out.result().ok());
  ExpectMatches(*stream_out.result(), Compute(stream_audio, 16000), "stream");
  EXPECT_EQ(refused.completions(), 0);
}

TEST(EngineTest, DrainDeadlineEndsUnfinishedJobsWithUnavailable) {
  Rig rig = MakeRig(EngineOptions{});
  Outcome open_stream;
  auto handle = rig.engine->StartJob(JobOptions{}, open_stream.Callbacks());
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE((*handle)->Append(RandomAudio(20000)).ok());
  absl::Status s = rig.engine->Drain(absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(open_stream.completions(), 1);
  EXPECT_EQ(open_stream.result().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ((*handle)->Append(RandomAudio(10)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(rig.engine->Drain(absl::Now()).ok());
}

TEST(EngineTest, ModelFailureFailsTheJobsOfThatBatch) {
  Rig rig = MakeRig(EngineOptions{});
  rig.controls[0]->SetFailure(absl::InternalError("out of memory"));
  Outcome out;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(kWin), out.Callbacks())
          .ok());
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.result().status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(out.result().status().message().find("out of memory"),
            std::string::npos);
  EXPECT_FALSE(rig.engine->Devices()[0].healthy);
  rig.controls[0]->SetFailure(absl::OkStatus());
  Outcome ok;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, RandomAudio(kWin), ok.Callbacks()).ok());
  ASSERT_TRUE(ok.Wait());
  EXPECT_TRUE(ok.result().ok());
  EXPECT_TRUE(rig.engine->Devices()[0].healthy);
}

TEST(EngineTest, CancelRacingCompletionStillCompletesOnce) {
  EngineOptions options;
  options.max_batch_wait = absl::ZeroDuration();
  Rig rig = MakeRig(options);
  std::uniform_int_distribution<int> delay_us(0, 3000);
  std::vector<std::unique_ptr<Outcome>> outs;
  for (int i = 0; i < 40; ++i) {
    outs.push_back(std::make_unique<Outcome>());
    auto handle = rig.engine->StartJob(JobOptions{}, outs.back()->Callbacks());
    ASSERT_TRUE(handle.ok());
    ASSERT_TRUE((*handle)->Append(RandomAudio(20000)).ok());
    ASSERT_TRUE((*handle)->Finish().ok());
    int us;
    {
      absl::MutexLock lock(&rng_mu);
      us = delay_us(Rng());
    }
    absl::SleepFor(absl::Microseconds(us));
    (*handle)->Cancel();
  }
  for (auto& o : outs) ASSERT_TRUE(o->Wait());
  EXPECT_TRUE(Eventually([&] {
    return rig.engine->active_jobs() == 0 &&
           rig.engine->backlog_audio_s() == 0.0;
  }));
  // A second completion, if there were one, would have come by now.
  absl::SleepFor(absl::Milliseconds(50));
  int ok = 0;
  for (auto& o : outs) {
    EXPECT_EQ(o->completions(), 1);
    const absl::StatusCode code = o->result().status().code();
    EXPECT_TRUE(code == absl::StatusCode::kOk ||
                code == absl::StatusCode::kCancelled);
    ok += code == absl::StatusCode::kOk;
  }
  std::fprintf(stderr, "cancel race: %d of 40 finished before the cancel\n",
               ok);
  EXPECT_EQ(rig.engine->active_jobs(), 0);
  EXPECT_EQ(rig.engine->backlog_audio_s(), 0.0);
}

TEST(EngineTest, BadJobOptionsAreRejectedUpFront) {
  Rig rig = MakeRig(EngineOptions{});
  Outcome out;
  JobOptions hints;
  hints.hints.min_speakers = 4;
  hints.hints.max_speakers = 2;
  EXPECT_EQ(rig.engine->Submit(hints, RandomAudio(100), out.Callbacks())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  JobOptions step;
  step.config.step_samples = 0;
  EXPECT_EQ(rig.engine->StartJob(step, out.Callbacks()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      rig.engine->Submit(JobOptions{}, {}, out.Callbacks()).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.engine->Submit(JobOptions{}, RandomAudio(10), JobCallbacks{})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A stream that ends without audio completes with INVALID_ARGUMENT.
  auto empty = rig.engine->StartJob(JobOptions{}, out.Callbacks());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->Finish().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.result().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.completions(), 1);
  EXPECT_EQ((*empty)->Finish().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EngineTest, CreateRejectsBadArguments) {
  std::vector<Device> none;
  EXPECT_EQ(Engine::Create(EngineOptions{}, std::move(none), nullptr, nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto control = std::make_shared<FakeControl>();
  std::vector<Device> two;
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.name = "same";
    d.segmentation = std::make_unique<testing::FakeSegmentationModel>(control);
    d.embedding = std::make_unique<testing::FakeEmbeddingModel>(control);
    two.push_back(std::move(d));
  }
  EngineOptions options;
  options.cluster_function = EchoCluster;
  EXPECT_EQ(
      Engine::Create(options, std::move(two), nullptr, nullptr).status().code(),
      absl::StatusCode::kInvalidArgument);
  std::vector<Device> failing(1);
  failing[0].name = "gpu";
  failing[0].segmentation =
      std::make_unique<testing::FakeSegmentationModel>(control);
  failing[0].embedding = std::make_unique<testing::FakeEmbeddingModel>(control);
  failing[0].on_worker_start = [] {
    return absl::FailedPreconditionError("no such GPU");
  };
  auto r = Engine::Create(options, std::move(failing), nullptr, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("gpu"), std::string::npos);
}

}  // namespace
}  // namespace diarization::runtime
