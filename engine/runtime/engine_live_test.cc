// The engine's live path, with fake networks (fake_models.h): where the time
// goes between the end of a job's audio and its result (JobResult::tail),
// and a final clustering that must not wait for other jobs' provisional
// clusterings. Audio is fresh random per run (the seed is printed).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/fake_models.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace diarization::runtime {
namespace {

using testing::FakeControl;

std::mt19937_64& Rng() {
  static std::mt19937_64* rng = [] {
    const uint64_t seed = std::random_device{}();
    std::fprintf(stderr, "engine_live_test seed: %llu\n",
                 static_cast<unsigned long long>(seed));
    return new std::mt19937_64(seed);
  }();
  return *rng;
}

// Speaker turns the fake segmentation reads back (fake_models.h).
std::vector<float> RandomAudio(int64_t n) {
  return testing::FakeSpeakerAudio(n, Rng());
}

// An echo of the inputs' size, as the engine tests' EchoCluster.
absl::StatusOr<pipeline::DiarizationOutput> Echo(int num_windows) {
  pipeline::DiarizationOutput out;
  out.labels = {std::to_string(num_windows)};
  return out;
}

struct Rig {
  std::shared_ptr<FakeControl> control = std::make_shared<FakeControl>();
  std::shared_ptr<prometheus::Registry> registry =
      std::make_shared<prometheus::Registry>();
  std::unique_ptr<Engine> engine;
};

std::unique_ptr<Rig> MakeRig(EngineOptions options) {
  auto rig = std::make_unique<Rig>();
  Device d;
  d.name = "fake:0";
  d.description = "fake device";
  d.segmentation =
      std::make_unique<testing::FakeSegmentationModel>(rig->control);
  d.embedding = std::make_unique<testing::FakeEmbeddingModel>(rig->control);
  std::vector<Device> devices;
  devices.push_back(std::move(d));
  auto metrics = Metrics::Create(rig->registry, {"test", "test"});
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  auto engine = Engine::Create(std::move(options), std::move(devices),
                               /*plda=*/nullptr, *metrics);
  EXPECT_TRUE(engine.ok()) << engine.status();
  rig->engine = std::move(*engine);
  return rig;
}

// One job's completion and when it came.
class Outcome {
 public:
  JobCallbacks Callbacks() {
    JobCallbacks cb;
    cb.on_complete = [this](absl::StatusOr<JobResult> r) {
      const absl::Time now = absl::Now();
      absl::MutexLock lock(&mu_);
      ++completions_;
      completed_at_ = now;
      result_ = std::move(r);
    };
    cb.on_partial = [this](PartialResult) {
      absl::MutexLock lock(&mu_);
      ++partials_;
    };
    return cb;
  }
  bool Wait(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](int* n) { return *n > 0; }, &completions_),
        timeout);
  }
  absl::StatusOr<JobResult> result() {
    absl::MutexLock lock(&mu_);
    return result_.value_or(absl::UnknownError("no completion yet"));
  }
  absl::Time completed_at() {
    absl::MutexLock lock(&mu_);
    return completed_at_;
  }
  int completions() {
    absl::MutexLock lock(&mu_);
    return completions_;
  }
  int partials() {
    absl::MutexLock lock(&mu_);
    return partials_;
  }

 private:
  absl::Mutex mu_;
  int completions_ ABSL_GUARDED_BY(mu_) = 0;
  int partials_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time completed_at_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::StatusOr<JobResult>> result_ ABSL_GUARDED_BY(mu_);
};

double HistogramCount(prometheus::Registry& registry, const std::string& name,
                      const std::string& label, const std::string& value) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == label && l.value == value) {
          return static_cast<double>(m.histogram.sample_count);
        }
      }
    }
  }
  return -1.0;
}

double Sum(const TailTimes& t) {
  return t.segmentation_wait_s + t.segmentation_s + t.embedding_wait_s +
         t.embedding_s + t.host_wait_s + t.clustering_s + t.delivery_s;
}

// Every part is >= 0, they add up to total_s, and total_s lies within the
// time the caller saw from Finish to on_complete. Each network batch takes
// kBatch and each clustering kCluster, so the parts that must have happened
// after the end of the audio (the zero-padded last window, scheduled at
// Finish; the final clustering) are at least that long.
TEST(EngineLiveTest, TailTimesAddUpToTheTimeFromTheEndOfAudioToTheResult) {
  constexpr absl::Duration kBatch = absl::Milliseconds(15);
  constexpr absl::Duration kCluster = absl::Milliseconds(30);
  EngineOptions options;
  options.host_threads = 2;
  options.cluster_function =
      [&](std::span<const float>, std::span<const float>, int num_windows,
          const pipeline::PipelineConfig&, const pipeline::SpeakerHints&) {
        absl::SleepFor(kCluster);
        return Echo(num_windows);
      };
  auto rig = MakeRig(options);
  rig->control->SetDelay(kBatch);

  constexpr int kStreams = 5;
  std::vector<Outcome> outcomes(kStreams + 1);
  std::vector<absl::Time> finished(kStreams + 1);
  std::vector<std::unique_ptr<Job>> jobs;
  std::uniform_int_distribution<int64_t> length(12 * 16000, 40 * 16000);
  for (int i = 0; i < kStreams; ++i) {
    auto job = rig->engine->StartJob(JobOptions{}, outcomes[i].Callbacks());
    ASSERT_TRUE(job.ok()) << job.status();
    jobs.push_back(*std::move(job));
  }
  for (int i = 0; i < kStreams; ++i) {
    // Not a whole number of steps: the last window is zero-padded and only
    // scheduled at Finish.
    const int64_t n = length(Rng()) | 1;
    const std::vector<float> audio = RandomAudio(n);
    for (int64_t at = 0; at < n; at += 16000) {
      const int64_t m = std::min<int64_t>(16000, n - at);
      ASSERT_TRUE(jobs[i]->Append(std::span<const float>(&audio[at], m)).ok());
    }
    finished[i] = absl::Now();
    ASSERT_TRUE(jobs[i]->Finish().ok());
  }
  // And a recording: its audio ends at Submit.
  finished[kStreams] = absl::Now();
  auto recording = rig->engine->Submit(JobOptions{}, RandomAudio(25 * 16000),
                                       outcomes[kStreams].Callbacks());
  ASSERT_TRUE(recording.ok()) << recording.status();

  for (int i = 0; i <= kStreams; ++i) {
    ASSERT_TRUE(outcomes[i].Wait(absl::Seconds(60))) << "job " << i;
    absl::StatusOr<JobResult> r = outcomes[i].result();
    ASSERT_TRUE(r.ok()) << r.status();
    const TailTimes& t = r->tail;
    const std::string what = "job " + std::to_string(i);
    for (double part :
         {t.segmentation_wait_s, t.segmentation_s, t.embedding_wait_s,
          t.embedding_s, t.host_wait_s, t.clustering_s, t.delivery_s}) {
      EXPECT_GE(part, 0.0) << what;
    }
    EXPECT_NEAR(Sum(t), t.total_s, 1e-9) << what;
    const double seen =
        absl::ToDoubleSeconds(outcomes[i].completed_at() - finished[i]);
    EXPECT_LE(t.total_s, seen + 1e-6) << what;
    EXPECT_GE(t.clustering_s, absl::ToDoubleSeconds(kCluster) - 1e-3) << what;
    EXPECT_GE(t.segmentation_s, absl::ToDoubleSeconds(kBatch) - 1e-3) << what;
    EXPECT_GE(t.embedding_s, absl::ToDoubleSeconds(kBatch) - 1e-3) << what;
    EXPECT_GE(t.total_s, absl::ToDoubleSeconds(kCluster + 2 * kBatch) - 3e-3)
        << what;
    EXPECT_GE(t.finals_running + t.finals_queued, 0) << what;
    EXPECT_LE(t.finals_running, options.host_threads) << what;
  }
  // One observation per part and job (the histogram's count).
  for (const char* part :
       {"total", "segmentation_wait", "segmentation", "embedding_wait",
        "embedding", "host_wait", "clustering", "delivery"}) {
    EXPECT_EQ(HistogramCount(*rig->registry, "diarization_tail_seconds", "part",
                             part),
              kStreams + 1)
        << part;
  }
}

// A job whose audio ended long ago (all windows through both networks
// before Finish) has no network part in its tail.
TEST(EngineLiveTest, WindowsDoneBeforeTheEndOfAudioCountNothing) {
  EngineOptions options;
  options.cluster_function =
      [](std::span<const float>, std::span<const float>, int num_windows,
         const pipeline::PipelineConfig&,
         const pipeline::SpeakerHints&) { return Echo(num_windows); };
  auto rig = MakeRig(options);
  Outcome outcome;
  auto job = rig->engine->StartJob(JobOptions{}, outcome.Callbacks());
  ASSERT_TRUE(job.ok()) << job.status();
  // Exactly 12 windows of 1 s step: no zero-padded window at Finish.
  const std::vector<float> audio = RandomAudio(21 * 16000);
  ASSERT_TRUE((*job)->Append(audio).ok());
  // Wait until every window is through (the backlog is empty).
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while ((*job)->backlog_audio_s() > 0.0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ((*job)->backlog_audio_s(), 0.0);
  ASSERT_TRUE((*job)->Finish().ok());
  ASSERT_TRUE(outcome.Wait(absl::Seconds(30)));
  absl::StatusOr<JobResult> r = outcome.result();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->num_windows, 12);
  EXPECT_EQ(r->tail.segmentation_wait_s, 0.0);
  EXPECT_EQ(r->tail.segmentation_s, 0.0);
  EXPECT_EQ(r->tail.embedding_wait_s, 0.0);
  EXPECT_EQ(r->tail.embedding_s, 0.0);
  EXPECT_NEAR(Sum(r->tail), r->tail.total_s, 1e-9);
}

// Two streams' provisional clusterings are stuck (the cluster function
// blocks them); a recording submitted now must still get its result, from
// the host thread kept for final clusterings (host_tasks.h). On the code
// before that rule both host threads held a provisional clustering and the
// recording's final waited for them.
TEST(EngineLiveTest, AFinalDoesNotWaitForOtherJobsProvisionalClusterings) {
  absl::Mutex mu;
  bool open = false;
  int blocked = 0;
  EngineOptions options;
  options.host_threads = 2;
  // The streams run Accurate() (1 s step), the recording Fast() (2 s): the
  // cluster function holds only the streams' clusterings.
  const int64_t stream_step = pipeline::PipelineConfig::Accurate().step_samples;
  options.cluster_function = [&](std::span<const float>, std::span<const float>,
                                 int num_windows,
                                 const pipeline::PipelineConfig& config,
                                 const pipeline::SpeakerHints&) {
    if (config.step_samples == stream_step) {
      absl::MutexLock lock(&mu);
      ++blocked;
      mu.Await(absl::Condition(&open));
      --blocked;
    }
    return Echo(num_windows);
  };
  auto rig = MakeRig(options);
  Outcome a, b, c;
  JobOptions live;
  live.partial_interval_s = 1.0;
  std::vector<std::unique_ptr<Job>> streams;
  for (Outcome* o : {&a, &b}) {
    auto job = rig->engine->StartJob(live, o->Callbacks());
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_TRUE((*job)->Append(RandomAudio(20 * 16000)).ok());
    streams.push_back(*std::move(job));
  }
  {
    // Both streams' first provisional clusterings are due once their first
    // window is through; the old code ran both at once.
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(
        mu.AwaitWithTimeout(absl::Condition(
                                +[](int* n) { return *n >= 1; }, &blocked),
                            absl::Seconds(30)));
    mu.AwaitWithTimeout(absl::Condition(
                            +[](int* n) { return *n >= 2; }, &blocked),
                        absl::Milliseconds(500));
  }
  JobOptions recording;
  recording.config = pipeline::PipelineConfig::Fast();
  auto job =
      rig->engine->Submit(recording, RandomAudio(15 * 16000), c.Callbacks());
  ASSERT_TRUE(job.ok()) << job.status();
  const bool in_time = c.Wait(absl::Seconds(5));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(blocked, 1) << "provisional clusterings running at once";
    open = true;
  }
  ASSERT_TRUE(in_time) << "the final waited for provisional clusterings";
  absl::StatusOr<JobResult> r = c.result();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tail.partials_running, 1);
  // The held-back stream's provisional clustering runs once the other one
  // ends (none lost): each stream gets a partial result.
  const absl::Time until = absl::Now() + absl::Seconds(20);
  while ((a.partials() == 0 || b.partials() == 0) && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_GE(a.partials(), 1);
  EXPECT_GE(b.partials(), 1);
  for (auto& s : streams) ASSERT_TRUE(s->Finish().ok());
  for (Outcome* o : {&a, &b}) {
    ASSERT_TRUE(o->Wait(absl::Seconds(60)));
    EXPECT_TRUE(o->result().ok()) << o->result().status();
    EXPECT_EQ(o->completions(), 1);
  }
}

}  // namespace
}  // namespace diarization::runtime
