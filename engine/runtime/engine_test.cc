// Engine tests with fake networks whose outputs are a known function of the
// audio (fake_models.h): every window's segmentation, masks and embeddings
// are checked against an independent computation here, so lost, mixed-up or
// misplaced windows fail. Audio is fresh random per run (the seed is
// printed). The streaming test also runs the real host pipeline
// (pipeline::Diarize with the community-1 PLDA).
#include "engine/runtime/engine.h"

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
#include "engine/runtime/fake_models.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "testing/metric_value.h"
#include "testing/test_data.h"

namespace diarization::runtime {
namespace {

using ::diarization::testing::MetricValue;
using testing::FakeClass;
using testing::FakeControl;
using testing::FakeEmbedding;
using testing::kFakeProbeStride;

constexpr int kWin = 160000;
constexpr int kF = 589;
constexpr int kS = 3;
constexpr int kD = 256;

// ---------------------------------------------------------------- audio --

absl::Mutex rng_mu;

std::mt19937_64& Rng() {
  static std::mt19937_64* rng = [] {
    const uint64_t seed = std::random_device{}();
    std::fprintf(stderr, "engine_test seed: %llu\n",
                 static_cast<unsigned long long>(seed));
    return new std::mt19937_64(seed);
  }();
  return *rng;
}

// Speaker turns the fake segmentation reads back (fake_models.h).
std::vector<float> RandomAudio(int64_t num_samples) {
  absl::MutexLock lock(&rng_mu);
  return testing::FakeSpeakerAudio(num_samples, Rng());
}

// ---------------------------------------- expected outputs, independently --

int NumWindows(int64_t n, int64_t step) {
  if (n < kWin) return 1;
  const int64_t full = 1 + (n - kWin) / step;
  return static_cast<int>(full + ((n - kWin) % step > 0 ? 1 : 0));
}

struct Expected {
  int num_windows = 0;
  std::vector<float> segmentations;  // (C, 589, 3)
  std::vector<float> embeddings;     // (C, 3, 256)
};

Expected Compute(const std::vector<float>& audio, int64_t step) {
  // Powerset classes {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}.
  static const int kMap[7][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1},
                                 {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};
  Expected e;
  const int64_t n = static_cast<int64_t>(audio.size());
  e.num_windows = NumWindows(n, step);
  e.segmentations.resize(size_t(e.num_windows) * kF * kS);
  e.embeddings.resize(size_t(e.num_windows) * kS * kD);
  std::vector<float> window(kWin);
  for (int c = 0; c < e.num_windows; ++c) {
    for (int i = 0; i < kWin; ++i) {
      const int64_t t = step * c + i;
      window[i] = t < n ? audio[t] : 0.0f;
    }
    float* seg = &e.segmentations[size_t(c) * kF * kS];
    for (int f = 0; f < kF; ++f) {
      const int cls = FakeClass(window[f * kFakeProbeStride]);
      for (int s = 0; s < kS; ++s) seg[f * kS + s] = kMap[cls][s];
    }
    // pipeline.md §5: overlap-free column if it has > 2 frames, else plain.
    for (int s = 0; s < kS; ++s) {
      std::vector<float> clean(kF), plain(kF);
      int clean_frames = 0;
      for (int f = 0; f < kF; ++f) {
        const float active = seg[f * kS] + seg[f * kS + 1] + seg[f * kS + 2];
        plain[f] = seg[f * kS + s];
        clean[f] = active < 2 ? plain[f] : 0.0f;
        clean_frames += clean[f] > 0;
      }
      const std::vector<float>& mask = clean_frames > 2 ? clean : plain;
      FakeEmbedding(window.data(), mask.data(),
                    &e.embeddings[(size_t(c) * kS + s) * kD]);
    }
  }
  return e;
}

// ------------------------------------------------------------------ rig --

// Hands the cluster stage's inputs back in the output, so tests see exactly
// what the engine fed it.
absl::StatusOr<pipeline::DiarizationOutput> EchoCluster(
    std::span<const float> seg, std::span<const float> emb, int num_windows,
    const pipeline::PipelineConfig&, const pipeline::SpeakerHints&) {
  pipeline::DiarizationOutput out;
  out.labels = {std::to_string(num_windows)};
  out.centroids.emplace_back(seg.begin(), seg.end());
  out.centroids.emplace_back(emb.begin(), emb.end());
  return out;
}

struct Rig {
  std::vector<std::shared_ptr<FakeControl>> controls;
  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<Metrics> metrics;
  std::unique_ptr<Engine> engine;
};

// engine_concurrent_stages_test builds this file with two worker threads
// per device (Device::concurrent_stages), engine_test with one.
#ifndef ENGINE_TEST_CONCURRENT_STAGES
#define ENGINE_TEST_CONCURRENT_STAGES false
#endif
constexpr bool kConcurrentStages = ENGINE_TEST_CONCURRENT_STAGES;

Rig MakeRig(EngineOptions options, int num_devices = 1,
            std::shared_ptr<const pipeline::PldaModel> plda = nullptr,
            std::function<DeviceMemoryStats()> memory = nullptr,
            std::function<void(Device&, std::shared_ptr<FakeControl>)>
                customize = nullptr) {
  Rig rig;
  if (plda == nullptr && !options.cluster_function) {
    options.cluster_function = EchoCluster;
  }
  std::vector<Device> devices;
  for (int i = 0; i < num_devices; ++i) {
    auto control = std::make_shared<FakeControl>();
    rig.controls.push_back(control);
    Device d;
    d.name = "fake:" + std::to_string(i);
    d.description = "fake device";
    d.segmentation = std::make_unique<testing::FakeSegmentationModel>(control);
    d.embedding = std::make_unique<testing::FakeEmbeddingModel>(control);
    d.memory_stats = memory;
    d.concurrent_stages = kConcurrentStages;
    // Device 0 reports its models' precision; device 1 overrides one.
    if (i == 1) d.embedding_precision = "tf32";
    if (customize) customize(d, control);
    devices.push_back(std::move(d));
  }
  rig.registry = std::make_shared<prometheus::Registry>();
  auto metrics = Metrics::Create(rig.registry, {"1.2.3", "abc123"});
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  rig.metrics = *metrics;
  auto engine =
      Engine::Create(std::move(options), std::move(devices), plda, rig.metrics);
  EXPECT_TRUE(engine.ok()) << engine.status();
  rig.engine = std::move(*engine);
  return rig;
}

// Records callbacks; fails the test on a second completion.
class Outcome {
 public:
  JobCallbacks Callbacks() {
    JobCallbacks cb;
    cb.on_complete = [this](absl::StatusOr<JobResult> r) {
      absl::MutexLock lock(&mu_);
      ++completions_;
      result_ = std::move(r);
    };
    cb.on_partial = [this](PartialResult p) {
      absl::MutexLock lock(&mu_);
      if (completions_ > 0) partial_after_completion_ = true;
      partials_.push_back(std::move(p));
    };
    return cb;
  }
  // Waits for the completion (up to `timeout`).
  bool Wait(absl::Duration timeout = absl::Seconds(60)) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return completions_ > 0;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  }
  absl::StatusOr<JobResult> result() {
    absl::MutexLock lock(&mu_);
    return result_.value_or(absl::UnknownError("no completion yet"));
  }
  int completions() {
    absl::MutexLock lock(&mu_);
    return completions_;
  }
  std::vector<PartialResult> partials() {
    absl::MutexLock lock(&mu_);
    return partials_;
  }
  bool partial_after_completion() {
    absl::MutexLock lock(&mu_);
    return partial_after_completion_;
  }

 private:
  absl::Mutex mu_;
  int completions_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::StatusOr<JobResult>> result_ ABSL_GUARDED_BY(mu_);
  std::vector<PartialResult> partials_ ABSL_GUARDED_BY(mu_);
  bool partial_after_completion_ ABSL_GUARDED_BY(mu_) = false;
};

// Checks an EchoCluster result against the independent computation.
void ExpectMatches(const JobResult& r, const Expected& e,
                   const std::string& what) {
  ASSERT_EQ(r.num_windows, e.num_windows) << what;
  ASSERT_EQ(r.output.centroids.size(), 2u) << what;
  ASSERT_EQ(r.output.labels.size(), 1u) << what;
  EXPECT_EQ(r.output.labels[0], std::to_string(e.num_windows)) << what;
  EXPECT_TRUE(r.output.centroids[0] == e.segmentations)
      << what << ": segmentations differ";
  EXPECT_TRUE(r.output.centroids[1] == e.embeddings)
      << what << ": embeddings differ";
}

// Streams `audio` in random chunk sizes in [1, max_chunk].
absl::Status StreamAll(Job& job, const std::vector<float>& audio,
                       int max_chunk) {
  std::uniform_int_distribution<int> size(1, max_chunk);
  uint64_t seed;
  {
    absl::MutexLock lock(&rng_mu);
    seed = Rng()();
  }
  std::mt19937_64 rng(seed);
  size_t pos = 0;
  while (pos < audio.size()) {
    const size_t n = std::min(audio.size() - pos, size_t(size(rng)));
    absl::Status s = job.Append(std::span<const float>(&audio[pos], n));
    if (!s.ok()) return s;
    pos += n;
  }
  return job.Finish();
}

// ------------------------------------------------------- metric reading --

// Polls `done` until it holds or 10 s pass (bookkeeping such as
// active_jobs and the gauges is updated just after a job's callback, so a
// fixed sleep would be flaky on a loaded machine).
bool Eventually(const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// ---------------------------------------------------------------- tests --

TEST(EngineTest, WholeAudioMatchesConstructionForEveryLength) {
  EngineOptions options;
  Rig rig = MakeRig(options);
  // Shorter than a window, exactly one window, full windows only, and
  // full windows plus a padded tail; ACCURATE (1 s) and FAST (2 s) steps.
  const std::vector<int64_t> lengths = {1,
                                        12345,
                                        kWin - 1,
                                        kWin,
                                        kWin + 16000 * 3,
                                        kWin + 16000 * 3 + 7,
                                        kWin + 32000 * 2 + 16000};
  for (bool fast : {false, true}) {
    for (int64_t n : lengths) {
      JobOptions job;
      job.config = fast ? pipeline::PipelineConfig::Fast()
                        : pipeline::PipelineConfig::Accurate();
      job.request_id = "len-" + std::to_string(n);
      std::vector<float> audio = RandomAudio(n);
      Outcome out;
      ASSERT_TRUE(
          rig.engine->Submit(job, std::vector<float>(audio), out.Callbacks())
              .ok());
      ASSERT_TRUE(out.Wait());
      absl::StatusOr<JobResult> r = out.result();
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->request_id, job.request_id);
      EXPECT_EQ(r->device, "fake:0");
      EXPECT_DOUBLE_EQ(r->audio_s, n / 16000.0);
      ExpectMatches(*r, Compute(audio, job.config.step_samples),
                    job.request_id);
    }
  }
}

TEST(EngineTest, StreamingEqualsWholeAudioWithTheRealPipeline) {
  auto plda = io::LoadPlda(diarization::testing::SharedModelsDir() +
                           "/community-1-plda");
  ASSERT_TRUE(plda.ok()) << plda.status();
  auto shared_plda = std::make_shared<const pipeline::PldaModel>(*plda);
  Rig rig = MakeRig(EngineOptions{}, 1, shared_plda);
  int64_t n;
  {
    absl::MutexLock lock(&rng_mu);
    n = std::uniform_int_distribution<int64_t>(16000 * 25, 16000 * 60)(Rng());
  }
  const std::vector<float> audio = RandomAudio(n);
  JobOptions job;
  job.return_intermediates = true;

  Outcome whole;
  ASSERT_TRUE(
      rig.engine->Submit(job, std::vector<float>(audio), whole.Callbacks())
          .ok());
  ASSERT_TRUE(whole.Wait());
  absl::StatusOr<JobResult> w = whole.result();
  ASSERT_TRUE(w.ok()) << w.status();

  for (int max_chunk : {1600, 20000, 100000}) {
    Outcome streamed;
    auto handle = rig.engine->StartJob(job, streamed.Callbacks());
    ASSERT_TRUE(handle.ok()) << handle.status();
    ASSERT_TRUE(StreamAll(**handle, audio, max_chunk).ok());
    ASSERT_TRUE(streamed.Wait());
    absl::StatusOr<JobResult> s = streamed.result();
    ASSERT_TRUE(s.ok()) << s.status();

    // Network outputs: by construction, and identical between the two.
    const Expected e = Compute(audio, job.config.step_samples);
    EXPECT_TRUE(s->segmentations == e.segmentations);
    EXPECT_TRUE(s->embeddings == e.embeddings);
    EXPECT_TRUE(w->segmentations == e.segmentations);
    EXPECT_TRUE(w->embeddings == e.embeddings);
    // Final result: the real host pipeline on the expected arrays.
    auto direct =
        pipeline::Diarize(e.segmentations, e.embeddings, e.num_windows,
                          *shared_plda, job.config, job.hints);
    ASSERT_TRUE(direct.ok()) << direct.status();
    ASSERT_FALSE(direct->segments.empty());
    EXPECT_EQ(diarization::FormatRttm(s->output.segments, "x"),
              diarization::FormatRttm(direct->segments, "x"));
    EXPECT_EQ(diarization::FormatRttm(w->output.segments, "x"),
              diarization::FormatRttm(direct->segments, "x"));
    EXPECT_EQ(s->output.labels, direct->labels);
    EXPECT_EQ(streamed.completions(), 1);
  }
}

// A recording shorter than one window: its zero-padded window is
// diarized on pyannote's frame grid and the segments are not cut at the
// end of the audio, as pyannote 4.0 does (SpeakerDiarization.apply crops
// only to the common extent of activations and speaker count, which is the
// padded window's grid; the golden speakrs "short" fixture, 3.289 s of
// audio, ends its last segment at 3.305 s: pipeline_parity_test). Here,
// 3.3 s of one speaker: the fake segmentation reads frame f from sample
// 271·f, so frames 0-194 are speech and 195 on (the padding) silence, and
// the segment ends at the middle of frame 195 (start + 195 × step +
// duration / 2 with pyannote's frame step 0.016875 s and duration
// 0.0619375 s), after the audio's end.
TEST(EngineTest, AShortRecordingsSegmentEndsOnTheFrameGridAfterItsAudio) {
  auto plda = io::LoadPlda(diarization::testing::SharedModelsDir() +
                           "/community-1-plda");
  ASSERT_TRUE(plda.ok()) << plda.status();
  Rig rig = MakeRig(EngineOptions{}, 1,
                    std::make_shared<const pipeline::PldaModel>(*plda));
  const int64_t n = 52800;  // 3.3 s
  ASSERT_LT(194 * kFakeProbeStride, n);
  ASSERT_GE(195 * kFakeProbeStride, n);
  std::vector<float> audio(n);
  for (int64_t i = 0; i < n; ++i) audio[i] = (i % 2 ? -1.5f : 1.5f) / 7.0f;
  Outcome outcome;
  ASSERT_TRUE(
      rig.engine->Submit(JobOptions{}, std::move(audio), outcome.Callbacks())
          .ok());
  ASSERT_TRUE(outcome.Wait());
  absl::StatusOr<JobResult> r = outcome.result();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->audio_s, 3.3, 1e-9);
  ASSERT_EQ(r->output.segments.size(), 1u)
      << diarization::FormatRttm(r->output.segments, "x");
  const Segment& seg = r->output.segments[0];
  EXPECT_NEAR(seg.start_s, 0.0619375 / 2, 1e-6);
  EXPECT_NEAR(seg.end_s, 195 * 0.016875 + 0.0619375 / 2, 1e-6);
  EXPECT_GT(seg.end_s, r->audio_s);
  ASSERT_EQ(r->output.exclusive_segments.size(), 1u);
  EXPECT_NEAR(r->output.exclusive_segments[0].end_s, seg.end_s, 1e-9);
}

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

// Submits two jobs at once (so batches mix their windows), each of one
// window plus 1 s × [min_extra_s, min_extra_s + 20) of random speaker audio,
// and checks both results against the independent computation.
void TwoJobsGiveTheReference(Engine& engine, std::mt19937& rng,
                             int min_extra_s) {
  Outcome a, b;
  const std::vector<float> audio_a =
      RandomAudio(kWin + 16000 * (min_extra_s + rng() % 20));
  const std::vector<float> audio_b =
      RandomAudio(kWin + 16000 * (min_extra_s + rng() % 20));
  ASSERT_TRUE(
      engine.Submit(JobOptions{}, std::vector<float>(audio_a), a.Callbacks())
          .ok());
  ASSERT_TRUE(
      engine.Submit(JobOptions{}, std::vector<float>(audio_b), b.Callbacks())
          .ok());
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  ASSERT_TRUE(a.result().ok()) << a.result().status();
  ASSERT_TRUE(b.result().ok()) << b.result().status();
  ExpectMatches(*a.result(), Compute(audio_a, 16000), "a");
  ExpectMatches(*b.result(), Compute(audio_b, 16000), "b");
}

// Forwards to a model and records whether each batch's audio lay inside one
// of `buffers` (the ranges Device::pinned_host_floats handed out).
struct BufferRanges {
  absl::Mutex mu;
  std::vector<std::pair<const float*, size_t>> given ABSL_GUARDED_BY(mu);
  int inside ABSL_GUARDED_BY(mu) = 0;
  int outside ABSL_GUARDED_BY(mu) = 0;
  void Record(std::span<const float> audio) {
    absl::MutexLock lock(&mu);
    bool in = false;
    for (const auto& [base, floats] : given) {
      in |=
          audio.data() >= base && audio.data() + audio.size() <= base + floats;
    }
    (in ? inside : outside)++;
  }
};

class RecordingSegmentation : public models::SegmentationModel {
 public:
  RecordingSegmentation(std::unique_ptr<models::SegmentationModel> inner,
                        BufferRanges* ranges)
      : inner_(std::move(inner)), ranges_(ranges) {}
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<float> log_probs) override {
    return inner_->Run(windows, batch, log_probs);
  }
  absl::Status RunSpans(const models::WindowSpans& spans,
                        std::span<float> log_probs) override {
    ranges_->Record(spans.audio);
    return inner_->RunSpans(spans, log_probs);
  }
  std::string precision() const override { return inner_->precision(); }

 private:
  std::unique_ptr<models::SegmentationModel> inner_;
  BufferRanges* ranges_;
};

class RecordingEmbedding : public models::EmbeddingModel {
 public:
  RecordingEmbedding(std::unique_ptr<models::EmbeddingModel> inner,
                     BufferRanges* ranges)
      : inner_(std::move(inner)), ranges_(ranges) {}
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override {
    return inner_->Run(windows, batch, masks, masks_per_window, embeddings);
  }
  absl::Status RunSpans(const models::WindowSpans& spans,
                        std::span<const float> masks, int masks_per_window,
                        std::span<float> embeddings) override {
    ranges_->Record(spans.audio);
    return inner_->RunSpans(spans, masks, masks_per_window, embeddings);
  }
  std::string precision() const override { return inner_->precision(); }

 private:
  std::unique_ptr<models::EmbeddingModel> inner_;
  BufferRanges* ranges_;
};

// With Device::pinned_host_floats, each stage's batches gather their audio
// in the memory the device gave it (sized for the stage's largest batch), so
// a GPU backend uploads it without copying it again; the results are the
// independently computed ones. A failing hook fails the engine's start with
// its reason.
TEST(EngineTest, BatchAudioLiesInTheDevicesPageLockedBuffers) {
  std::mt19937 rng(std::random_device{}());
  EngineOptions options;
  options.segmentation_batch_size = 2 + rng() % 12;
  options.embedding_batch_size = 1 + rng() % 6;
  BufferRanges ranges;
  std::vector<size_t> asked;
  Rig rig = MakeRig(
      options, 1, nullptr, nullptr,
      [&](Device& d, std::shared_ptr<FakeControl>) {
        d.segmentation = std::make_unique<RecordingSegmentation>(
            std::move(d.segmentation), &ranges);
        d.embedding = std::make_unique<RecordingEmbedding>(
            std::move(d.embedding), &ranges);
        d.pinned_host_floats =
            [&](size_t floats) -> absl::StatusOr<std::shared_ptr<float[]>> {
          std::shared_ptr<float[]> buffer(new float[floats]);
          absl::MutexLock lock(&ranges.mu);
          ranges.given.emplace_back(buffer.get(), floats);
          asked.push_back(floats);
          return buffer;
        };
      });
  ASSERT_NE(rig.engine, nullptr);
  // The segmentation's, and one per embedding batch in flight.
  std::vector<size_t> want = {size_t(options.segmentation_batch_size) * kWin,
                              size_t(options.embedding_batch_size) * kWin,
                              size_t(options.embedding_batch_size) * kWin};
  std::sort(asked.begin(), asked.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(asked, want);
  ASSERT_NO_FATAL_FAILURE(TwoJobsGiveTheReference(*rig.engine, rng, 5));
  {
    absl::MutexLock lock(&ranges.mu);
    EXPECT_GT(ranges.inside, 0);
    EXPECT_EQ(ranges.outside, 0);
  }

  // A device that cannot give the memory: the start fails, saying why.
  std::vector<Device> devices;
  Device d;
  d.name = "fake:0";
  auto control = std::make_shared<FakeControl>();
  d.segmentation = std::make_unique<testing::FakeSegmentationModel>(control);
  d.embedding = std::make_unique<testing::FakeEmbeddingModel>(control);
  d.concurrent_stages = kConcurrentStages;
  d.pinned_host_floats =
      [](size_t) -> absl::StatusOr<std::shared_ptr<float[]>> {
    return absl::ResourceExhaustedError("no page-locked memory left");
  };
  devices.push_back(std::move(d));
  EngineOptions failing;
  failing.cluster_function = EchoCluster;
  auto metrics = Metrics::Create(std::make_shared<prometheus::Registry>(),
                                 {"1.2.3", "abc123"});
  ASSERT_TRUE(metrics.ok());
  auto engine =
      Engine::Create(std::move(failing), std::move(devices), nullptr, *metrics);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(engine.status().message().find("no page-locked memory left"),
            std::string::npos)
      << engine.status();
}

// A pipelined embedding model (EmbeddingModel::StartSpans) gets batch k + 1
// before batch k is finished when the stages have threads of their own, and
// one batch at a time otherwise. The fake runs each batch at its
// FinishSpans, reading the audio only then, so a worker that reused a
// started batch's audio buffer (BatchWindows, here in the device's
// buffers) would give embeddings of other windows: the results are the
// independently computed ones.
TEST(EngineTest, APipelinedEmbeddingModelHasTheNextBatchBeforeTheCurrentEnds) {
  std::mt19937 rng(std::random_device{}());
  EngineOptions options;
  options.segmentation_batch_size = 4 + rng() % 8;
  options.embedding_batch_size = 1 + rng() % 3;
  testing::FakePipelinedEmbedding* pipelined = nullptr;
  std::shared_ptr<FakeControl> control;
  Rig rig = MakeRig(
      options, 1, nullptr, nullptr,
      [&](Device& d, std::shared_ptr<FakeControl> c) {
        control = c;
        auto model = std::make_unique<testing::FakePipelinedEmbedding>(
            std::move(d.embedding));
        pipelined = model.get();
        d.embedding = std::move(model);
        d.pinned_host_floats =
            [](size_t floats) -> absl::StatusOr<std::shared_ptr<float[]>> {
          return std::shared_ptr<float[]>(new float[floats]);
        };
      });
  ASSERT_NE(rig.engine, nullptr);
  // Slow batches, so the next embedding batch is ready while one runs.
  control->SetDelay(absl::Milliseconds(5));
  ASSERT_NO_FATAL_FAILURE(TwoJobsGiveTheReference(*rig.engine, rng, 20));
  EXPECT_EQ(pipelined->most_in_flight(), kConcurrentStages ? 2 : 1);
  // Only the embedding thread calls it (the segmentation thread once
  // finished batches, concurrently: "cudaEventElapsedTime: device not
  // ready" in the real server).
  EXPECT_EQ(pipelined->calls_from_other_threads(), 0);
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

TEST(EngineTest, SixteenConcurrentStreamsLoseAndMixNothing) {
  EngineOptions options;
  options.host_threads = 3;
  Rig rig = MakeRig(options, /*num_devices=*/2);
  constexpr int kJobs = 16;
  std::vector<std::vector<float>> audios(kJobs);
  std::uniform_int_distribution<int64_t> len(1000, 16000 * 24);
  for (auto& a : audios) {
    int64_t n;
    {
      absl::MutexLock lock(&rng_mu);
      n = len(Rng());
    }
    a = RandomAudio(n);
  }
  std::vector<std::unique_ptr<Outcome>> outs(kJobs);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < kJobs; ++i) {
    outs[i] = std::make_unique<Outcome>();
    threads.emplace_back([&, i] {
      JobOptions job;
      job.request_id = "stream-" + std::to_string(i);
      job.config = i % 2 ? pipeline::PipelineConfig::Fast()
                         : pipeline::PipelineConfig::Accurate();
      auto handle = rig.engine->StartJob(job, outs[i]->Callbacks());
      if (!handle.ok() || !StreamAll(**handle, audios[i], 9000).ok()) ++errors;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(outs[i]->Wait());
    auto r = outs[i]->result();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->request_id, "stream-" + std::to_string(i));
    ExpectMatches(*r, Compute(audios[i], i % 2 ? 32000 : 16000), r->request_id);
  }
  EXPECT_TRUE(Eventually([&] {
    return rig.engine->active_jobs() == 0 &&
           rig.engine->backlog_audio_s() == 0.0;
  }));
  // A second completion, if there were one, would have come by now.
  absl::SleepFor(absl::Milliseconds(100));
  for (auto& o : outs) EXPECT_EQ(o->completions(), 1);
  EXPECT_EQ(
      MetricValue(*rig.registry, "diarization_jobs_total", {{"code", "OK"}}),
      kJobs);
}

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

TEST(EngineTest, PartialResultsArriveBeforeTheFinalOne) {
  EngineOptions options;
  std::atomic<int> partial_calls{0};
  options.cluster_function = [&](std::span<const float> seg,
                                 std::span<const float> emb, int num_windows,
                                 const pipeline::PipelineConfig& config,
                                 const pipeline::SpeakerHints& hints) {
    ++partial_calls;
    return EchoCluster(seg, emb, num_windows, config, hints);
  };
  Rig rig = MakeRig(options);
  JobOptions job;
  job.partial_interval_s = 5.0;
  Outcome out;
  auto handle = rig.engine->StartJob(job, out.Callbacks());
  ASSERT_TRUE(handle.ok());
  const std::vector<float> audio = RandomAudio(16000 * 40 + 333);
  // Real-time-ish: 1 s of audio every 2 ms, so windows finish as it flows.
  for (size_t pos = 0; pos < audio.size(); pos += 16000) {
    const size_t n = std::min<size_t>(16000, audio.size() - pos);
    ASSERT_TRUE((*handle)->Append(std::span<const float>(&audio[pos], n)).ok());
    absl::SleepFor(absl::Milliseconds(2));
  }
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE((*handle)->Finish().ok());
  ASSERT_TRUE(out.Wait());
  ASSERT_TRUE(out.result().ok());
  const std::vector<PartialResult> partials = out.partials();
  ASSERT_GE(partials.size(), 3u);
  double last = 0.0;
  for (const PartialResult& p : partials) {
    EXPECT_GT(p.audio_processed_s, last);
    EXPECT_LE(p.audio_processed_s, p.audio_received_s);
    EXPECT_GE(p.audio_processed_s, 5.0);
    last = p.audio_processed_s;
    // The clustering's labels and centroids come along (EchoCluster: the
    // window count, and the segmentations and embeddings as centroids),
    // for identification and stable labels in the server.
    ASSERT_EQ(p.labels.size(), 1u);
    EXPECT_EQ(std::stod(p.labels[0]), std::round(p.audio_processed_s - 9.0));
    EXPECT_EQ(p.centroids.size(), 2u);
  }
  EXPECT_FALSE(out.partial_after_completion());
  EXPECT_EQ(out.completions(), 1);
  EXPECT_EQ(partial_calls.load(), static_cast<int>(partials.size()) + 1);
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
