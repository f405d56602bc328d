// Engine tests. Admission and backpressure: the backlog limit and its retry
// hint, a stream paced by NotifyWhenBacklogAtMost, reservations by share and
// peer, memory high-water marks, and a recording giving memory back as it goes.
// The rig (fake networks, the independent computation, the engine on
// them) is engine_test_rig.h.
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
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;

TEST(EngineTest, FullBacklogIsResourceExhaustedWithRetryHint) {
  EngineOptions options;
  options.max_backlog_audio_s = 60.0;
  options.max_request_backlog_share = 1.0;  // one file may take it all
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);
  Outcome first;
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, RandomAudio(16000 * 50), first.Callbacks())
          .ok());
  Outcome rejected;
  absl::Status s =
      rig.engine
          ->Submit(JobOptions{}, RandomAudio(16000 * 20), rejected.Callbacks())
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  ASSERT_TRUE(RetryAfter(s).has_value());
  EXPECT_GE(*RetryAfter(s), 1.0);
  EXPECT_EQ(RetryAfter(absl::InternalError("x")), std::nullopt);
  // Alone longer than the whole backlog: never admissible.
  EXPECT_EQ(
      rig.engine
          ->Submit(JobOptions{}, RandomAudio(16000 * 61), rejected.Callbacks())
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  // An accepted stream is never failed for load (issue 13): audio past the
  // limit is taken, and the backlog goes over it.
  Outcome streamed;
  auto handle = rig.engine->StartJob(JobOptions{}, streamed.Callbacks());
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE((*handle)->Append(RandomAudio(16000 * 9)).ok());
  EXPECT_TRUE((*handle)->Append(RandomAudio(16000 * 2)).ok());
  EXPECT_NEAR(rig.engine->backlog_audio_s(), 61.0, 1e-9);
  EXPECT_NEAR((*handle)->backlog_audio_s(), 11.0, 1e-9);
  // At the limit, a new stream is refused with the hint.
  Outcome refused_stream;
  auto refused = rig.engine->StartJob(JobOptions{}, refused_stream.Callbacks());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(RetryAfter(refused.status()).has_value());
  (*handle)->Cancel();
  ASSERT_TRUE(streamed.Wait());
  EXPECT_EQ(streamed.result().status().code(), absl::StatusCode::kCancelled);
  EXPECT_NEAR(rig.engine->backlog_audio_s(), 50.0, 1e-9);
  // 50 s < 60 s: a new stream may start again.
  Outcome streamed2;
  auto stream2 = rig.engine->StartJob(JobOptions{}, streamed2.Callbacks());
  EXPECT_TRUE(stream2.ok());
  control.SetGate(true);
  ASSERT_TRUE(first.Wait());
  EXPECT_TRUE(first.result().ok());
  EXPECT_EQ(rejected.completions(), 0);
  EXPECT_EQ(refused_stream.completions(), 0);
}

// Issue 13: a stream fed faster than the device works is slowed down, not
// failed. The feeder holds back while the job's backlog is above a
// high-water mark and resumes on the engine's callback; the engine backlog
// limit is far below the stream's length.
TEST(EngineTest, AStreamFedFasterThanTheDeviceIsPacedNotFailed) {
  EngineOptions options;
  options.max_backlog_audio_s = 10.0;  // below the stream's high-water mark
  options.segmentation_batch_size = 4;
  options.embedding_batch_size = 4;
  Rig rig = MakeRig(options);
  rig.controls[0]->SetDelay(absl::Milliseconds(3));
  Outcome out;
  auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
  ASSERT_TRUE(handle.ok());
  Job& job = **handle;
  const std::vector<float> audio = RandomAudio(16000 * 150 + 777);
  constexpr double kHigh = 20.0, kLow = 12.0;
  int waits = 0;
  double worst = 0.0;
  for (size_t pos = 0; pos < audio.size(); pos += 16000) {
    const size_t n = std::min<size_t>(16000, audio.size() - pos);
    ASSERT_TRUE(job.Append(std::span<const float>(&audio[pos], n)).ok());
    worst = std::max(worst, job.backlog_audio_s());
    if (job.backlog_audio_s() > kHigh) {
      absl::Notification resumed;
      std::atomic<int> calls{0};
      job.NotifyWhenBacklogAtMost(kLow, [&] {
        ++calls;
        resumed.Notify();
      });
      ASSERT_TRUE(resumed.WaitForNotificationWithTimeout(absl::Seconds(30)));
      EXPECT_LE(job.backlog_audio_s(), kLow + 1e-9);
      EXPECT_EQ(calls.load(), 1);
      ++waits;
    }
  }
  ASSERT_TRUE(job.Finish().ok());
  ASSERT_TRUE(out.Wait());
  ASSERT_TRUE(out.result().ok()) << out.result().status();
  ExpectMatches(*out.result(), Compute(audio, 16000), "paced stream");
  EXPECT_GT(waits, 3);  // it really was faster than the device
  EXPECT_LE(worst, kHigh + 1.0 + 1e-9);
  EXPECT_EQ(out.completions(), 1);
}

// The resume of NotifyWhenBacklogAtMost: exactly once, never inside the
// call, and at the completion (before on_complete) if the backlog never got
// there; a later call replaces a pending one.
TEST(EngineTest, NotifyWhenBacklogAtMostFiresExactlyOnce) {
  Rig rig = MakeRig(EngineOptions{});
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);

  // Already below: posted, not run inside the call.
  {
    Outcome out;
    auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
    ASSERT_TRUE(handle.ok());
    ASSERT_TRUE((*handle)->Append(RandomAudio(16000 * 3)).ok());
    EXPECT_NEAR((*handle)->backlog_audio_s(), 3.0, 1e-9);
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<int> calls{0};
    std::atomic<bool> ran_inside{false};
    absl::Notification done;
    (*handle)->NotifyWhenBacklogAtMost(5.0, [&] {
      ran_inside = std::this_thread::get_id() == caller;
      // Calling back into the job must not deadlock (no engine lock held).
      EXPECT_NEAR((*handle)->backlog_audio_s(), 3.0, 1e-9);
      ++calls;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_FALSE(ran_inside.load());
    // Any backlog is at most +inf.
    absl::Notification inf;
    (*handle)->NotifyWhenBacklogAtMost(std::numeric_limits<double>::infinity(),
                                       [&] { inf.Notify(); });
    EXPECT_TRUE(inf.WaitForNotificationWithTimeout(absl::Seconds(10)));
    (*handle)->Cancel();
    ASSERT_TRUE(out.Wait());
    absl::SleepFor(absl::Milliseconds(20));
    EXPECT_EQ(calls.load(), 1);
  }

  // Pending, replaced, then the job is cancelled: the replaced one never
  // runs, the latest runs once, just before on_complete.
  {
    std::vector<std::string> events;
    absl::Mutex events_mu;
    auto record = [&](std::string e) {
      absl::MutexLock lock(&events_mu);
      events.push_back(std::move(e));
    };
    absl::Notification completed;
    JobCallbacks cb;
    cb.on_complete = [&](absl::StatusOr<JobResult> r) {
      record("complete:" +
             std::string(absl::StatusCodeToString(r.status().code())));
      completed.Notify();
    };
    auto handle = rig.engine->StartJob(JobOptions{}, cb);
    ASSERT_TRUE(handle.ok());
    ASSERT_TRUE((*handle)->Append(RandomAudio(kWin + 16000 * 10)).ok());
    (*handle)->NotifyWhenBacklogAtMost(1.0, [&] { record("first"); });
    (*handle)->NotifyWhenBacklogAtMost(2.0, [&] { record("second"); });
    absl::SleepFor(absl::Milliseconds(20));
    {
      absl::MutexLock lock(&events_mu);
      EXPECT_TRUE(events.empty());  // the device holds everything
    }
    (*handle)->Cancel();
    ASSERT_TRUE(completed.WaitForNotificationWithTimeout(absl::Seconds(10)));
    absl::SleepFor(absl::Milliseconds(20));
    absl::MutexLock lock(&events_mu);
    EXPECT_EQ(events,
              (std::vector<std::string>{"second", "complete:CANCELLED"}));
    // After the completion: still exactly once, posted at once.
    absl::Notification late;
    (*handle)->NotifyWhenBacklogAtMost(0.0, [&] { late.Notify(); });
    EXPECT_TRUE(late.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }

  // Pending, then the windows drain: fires once when the backlog gets there.
  {
    Outcome out;
    auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
    ASSERT_TRUE(handle.ok());
    ASSERT_TRUE((*handle)->Append(RandomAudio(kWin + 16000 * 20)).ok());
    std::atomic<int> calls{0};
    std::atomic<double> backlog_at_resume{-1.0};
    absl::Notification resumed;
    (*handle)->NotifyWhenBacklogAtMost(15.0, [&] {
      backlog_at_resume = (*handle)->backlog_audio_s();
      ++calls;
      resumed.Notify();
    });
    EXPECT_FALSE(resumed.HasBeenNotified());
    control.SetGate(true);
    ASSERT_TRUE(resumed.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_LE(backlog_at_resume.load(), 15.0);
    ASSERT_TRUE((*handle)->Finish().ok());
    ASSERT_TRUE(out.Wait());
    EXPECT_TRUE(out.result().ok());
    absl::SleepFor(absl::Milliseconds(20));
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ((*handle)->backlog_audio_s(), 0.0);
  }
}

TEST(EngineTest, ReservationsAdmitByShareAndPeer) {
  EngineOptions options;
  options.max_backlog_audio_s = 100.0;
  options.max_request_backlog_share = 0.25;
  options.max_calls_per_peer = 2;
  options.max_peer_backlog_audio_s = 30.0;
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);
  Engine& engine = *rig.engine;

  // One recording may take at most 25 s of the 100 s: never admissible.
  EXPECT_EQ(engine.Reserve({.audio_s = 26.0, .peer = "a"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.Reserve({.audio_s = -1.0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Untrusted header durations: huge, infinite, NaN.
  for (double s : {1e30, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(engine.Reserve({.audio_s = s}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << s;
  }
  EXPECT_EQ(engine.backlog_audio_s(), 0.0);

  // Exactly at the share: admissible (the seconds of a sample count).
  {
    Outcome at_cap;
    auto job = engine.Submit(JobOptions{}, RandomAudio(16000 * 25),
                             at_cap.Callbacks());
    EXPECT_TRUE(job.ok()) << job.status();
    if (job.ok()) {
      (*job)->Cancel();
      // Its completion writes into at_cap: not after this block.
      ASSERT_TRUE(at_cap.Wait());
    }
    auto r = engine.Reserve({.audio_s = 25.0});
    EXPECT_TRUE(r.ok()) << r.status();
  }

  // Held until used or dropped.
  {
    auto r = engine.Reserve({.audio_s = 20.0, .peer = "a"});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->valid());
    EXPECT_NEAR(engine.backlog_audio_s(), 20.0, 1e-9);
    // Peer a: 20 + 20 > 30 s of backlog.
    auto over = engine.Reserve({.audio_s = 20.0, .peer = "a"});
    EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_TRUE(RetryAfter(over.status()).has_value());
    // Another peer is not held back by a.
    auto other = engine.Reserve({.audio_s = 20.0, .peer = "b"});
    EXPECT_TRUE(other.ok()) << other.status();
    EXPECT_NEAR(engine.backlog_audio_s(), 40.0, 1e-9);
  }
  EXPECT_EQ(engine.backlog_audio_s(), 0.0);

  // Submit consumes it; more samples than reserved are admitted for the
  // difference, fewer give the rest back.
  auto r = engine.Reserve({.audio_s = 10.0, .peer = "a"});
  ASSERT_TRUE(r.ok());
  Outcome first;
  std::vector<float> samples = RandomAudio(16000 * 12);
  auto job = engine.Submit(JobOptions{}, std::move(samples), first.Callbacks(),
                           *std::move(r));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(samples.empty());  // moved, not copied
  EXPECT_FALSE(r->valid());
  EXPECT_NEAR(engine.backlog_audio_s(), 12.0, 1e-9);
  EXPECT_NEAR((*job)->backlog_audio_s(), 12.0, 1e-9);
  // An empty reservation admits nothing.
  Outcome bad;
  std::vector<float> kept = RandomAudio(100);
  EXPECT_EQ(
      engine
          .Submit(JobOptions{}, std::move(kept), bad.Callbacks(), Reservation())
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kept.size(), 100u);  // not accepted: the audio stays
  // Peer a: a stream is its second call; a third call is refused.
  Outcome second;
  JobOptions peer_a;
  peer_a.peer = "a";
  auto stream = engine.StartJob(peer_a, second.Callbacks());
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto third = engine.StartJob(peer_a, bad.Callbacks());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("2 calls"), std::string::npos)
      << third.status();
  EXPECT_TRUE(RetryAfter(third.status()).has_value());
  // A recording's handle cancels; dropping it would not.
  (*job)->Cancel();
  ASSERT_TRUE(first.Wait());
  EXPECT_EQ(first.result().status().code(), absl::StatusCode::kCancelled);
  // One call ended: room for peer a again.
  auto again = engine.Reserve({.audio_s = 1.0, .peer = "a"});
  EXPECT_TRUE(again.ok()) << again.status();
  (*stream)->Cancel();
  ASSERT_TRUE(second.Wait());
  EXPECT_EQ(bad.completions(), 0);
  control.SetGate(true);
}

// The retry hint is the backlog excess over the measured drain rate, not a
// constant.
TEST(EngineTest, RetryHintFollowsTheMeasuredDrainRate) {
  EngineOptions options;
  options.max_backlog_audio_s = 200.0;
  options.segmentation_batch_size = 4;
  options.embedding_batch_size = 4;
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  EXPECT_EQ(rig.engine->drain_rate(), 0.0);
  // Measure: 11 s of audio (2 windows) in 2 batches of 200 ms.
  control.SetDelay(absl::Milliseconds(200));
  Outcome warm;
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, RandomAudio(kWin + 16000), warm.Callbacks())
          .ok());
  ASSERT_TRUE(warm.Wait());
  const double measured = rig.engine->drain_rate();
  EXPECT_GT(measured, 1.0);   // faster than real time; set by the fake
  EXPECT_LT(measured, 40.0);  // so that the hint below is above 1 s
  // Fill the backlog and ask for more.
  control.SetGate(false);
  Outcome held;
  ASSERT_TRUE(
      rig.engine
          ->Submit(JobOptions{}, RandomAudio(16000 * 190), held.Callbacks())
          .ok());
  const double before = rig.engine->drain_rate();
  auto refused = rig.engine->Reserve({.audio_s = 50.0});
  const double after = rig.engine->drain_rate();
  control.SetDelay(absl::ZeroDuration());
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  const std::optional<double> hint = RetryAfter(refused.status());
  ASSERT_TRUE(hint.has_value());
  // Excess 190 + 50 - 200 = 40 s at the measured rate.
  EXPECT_GE(*hint, 40.0 / before * 0.999);
  EXPECT_LE(*hint, 40.0 / after * 1.001);
  control.SetGate(true);
  ASSERT_TRUE(held.Wait());
}

// Memory: what a job holds is exposed, counted in the engine total, given
// back at completion, and admission sheds new work above a high-water mark.
TEST(EngineTest, MemoryHighWaterMarksShedNewWork) {
  std::atomic<int64_t> rss{100 << 20};
  EngineOptions options;
  options.max_process_rss_bytes = 200 << 20;
  options.process_rss_bytes = [&rss] { return rss.load(); };
  options.max_job_memory_bytes = 8 << 20;
  Rig rig = MakeRig(options);
  FakeControl& control = *rig.controls[0];
  control.SetGate(false);
  Engine& engine = *rig.engine;
  EXPECT_EQ(engine.job_memory_bytes(), 0);

  // The process is over its resident-set mark: refused, with a hint.
  rss = 300 << 20;
  auto refused = engine.Reserve({.audio_s = 1.0});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("memory"), std::string::npos);
  EXPECT_TRUE(RetryAfter(refused.status()).has_value());
  rss = 100 << 20;

  // A 3-minute recording holds its audio (11.5 MB) while it waits.
  Outcome big;
  const int64_t n = 16000 * 180;
  auto job = engine.Submit(JobOptions{}, RandomAudio(n), big.Callbacks());
  ASSERT_TRUE(job.ok()) << job.status();
  const int64_t held = (*job)->memory_bytes();
  EXPECT_GE(held, n * static_cast<int64_t>(sizeof(float)));
  EXPECT_EQ(engine.job_memory_bytes(), held);
  EXPECT_TRUE(Eventually([&] {  // the gauge, refreshed each second
    return MetricValue(*rig.registry, "diarization_job_memory_bytes", {}) ==
           static_cast<double>(held);
  }));
  // Above the engine's own mark: new calls are refused.
  Outcome other;
  auto stream = engine.StartJob(JobOptions{}, other.Callbacks());
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(stream.status().message().find("memory"), std::string::npos);
  control.SetGate(true);
  ASSERT_TRUE(big.Wait());
  ASSERT_TRUE(big.result().ok());
  EXPECT_GE(big.result()->peak_memory_bytes, held);
  EXPECT_EQ((*job)->memory_bytes(), 0);
  EXPECT_TRUE(Eventually([&] { return engine.job_memory_bytes() == 0; }));
  EXPECT_TRUE(Eventually([&] {
    return MetricValue(*rig.registry, "diarization_job_memory_bytes", {}) ==
               0.0 &&
           MetricValue(*rig.registry, "diarization_backlog_drain_rate", {}) >
               0.0;
  }));
  auto admitted = engine.StartJob(JobOptions{}, other.Callbacks());
  EXPECT_TRUE(admitted.ok()) << admitted.status();
}

// A recording's audio goes back while its windows finish (not only at the
// end), and nothing stays accounted after it.
TEST(EngineTest, ARecordingGivesMemoryBackAsItsWindowsFinish) {
  EngineOptions options;
  options.segmentation_batch_size = 8;
  options.embedding_batch_size = 8;
  Rig rig = MakeRig(options);
  rig.controls[0]->SetDelay(absl::Milliseconds(4));
  Outcome out;
  const int64_t n = 16000 * 180;
  auto job = rig.engine->Submit(JobOptions{}, RandomAudio(n), out.Callbacks());
  ASSERT_TRUE(job.ok());
  const int64_t start = (*job)->memory_bytes();
  EXPECT_GE(start, n * static_cast<int64_t>(sizeof(float)));
  int64_t least_while_running = start;
  while (!out.Wait(absl::Milliseconds(1))) {
    const int64_t now = (*job)->memory_bytes();
    if (now > 0) least_while_running = std::min(least_while_running, now);
  }
  ASSERT_TRUE(out.result().ok());
  EXPECT_LT(least_while_running, start * 3 / 4);
  EXPECT_EQ((*job)->memory_bytes(), 0);
  EXPECT_TRUE(Eventually([&] { return rig.engine->job_memory_bytes() == 0; }));
}

}  // namespace
}  // namespace diarization::runtime
