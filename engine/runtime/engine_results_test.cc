// Engine tests. What a job gives back: every window's outputs against the
// independent computation (recordings of every length, streams in random
// chunks, sixteen streams at once), the real host pipeline on a stream, a short
// recording's last segment, and the provisional results before the final one.
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
using testing::EchoCluster;
using testing::Eventually;
using testing::Expected;
using testing::ExpectMatches;
using testing::kFakeProbeStride;
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;
using testing::Rng;
using testing::rng_mu;
using testing::StreamAll;

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

// A stream whose buffers are handed over (Job::AppendOwned: one of a second
// or more is kept as it is, a shorter one copied) gives every window's
// outputs as the independent computation does, batches reading windows
// across the pieces.
TEST(EngineTest, AStreamOfHandedOverBuffersMatchesConstruction) {
  Rig rig = MakeRig(EngineOptions{});
  const std::vector<float> audio = RandomAudio(16000 * 45 + 777);
  Outcome out;
  auto handle = rig.engine->StartJob(JobOptions{}, out.Callbacks());
  ASSERT_TRUE(handle.ok()) << handle.status();
  uint64_t seed;
  {
    absl::MutexLock lock(&rng_mu);
    seed = Rng()();
  }
  std::mt19937_64 rng(seed);
  for (size_t pos = 0; pos < audio.size();) {
    const size_t n = std::min(audio.size() - pos, size_t(1 + rng() % 48000));
    ASSERT_TRUE((*handle)
                    ->AppendOwned(std::vector<float>(audio.begin() + pos,
                                                     audio.begin() + pos + n))
                    .ok());
    pos += n;
  }
  ASSERT_TRUE((*handle)->Finish().ok());
  ASSERT_TRUE(out.Wait());
  ASSERT_TRUE(out.result().ok()) << out.result().status();
  ExpectMatches(*out.result(), Compute(audio, 16000), "handed-over buffers");
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

}  // namespace
}  // namespace diarization::runtime
