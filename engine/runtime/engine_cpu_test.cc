// The engine with the real CPU networks (random weights written by
// MakeRandomModelDirectory) against a direct, unbatched computation with a
// second instance of the same networks: the offline networks pass with
// batch 1 (every window through segmentation alone, powerset → masks, every
// window through the embedding alone), then pipeline::Diarize. Two jobs (a
// whole recording and a stream of other audio) run at once so that the engine's
// batches mix windows of both.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "engine/audio/audio.h"
#include "engine/io/plda_files.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"
#include "engine/runtime/devices.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/offline_networks.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "testing/test_data.h"

namespace diarization::runtime {
namespace {

constexpr int kF = models::kFramesPerWindow;

struct Direct {
  std::vector<float> segmentations;
  std::vector<float> embeddings;
  pipeline::DiarizationOutput output;
};

// One window at a time: batch 1 everywhere, through the offline networks
// pass (offline_networks.h), then pipeline::Diarize.
Direct RunDirect(Device& nets, const std::vector<float>& audio,
                 const pipeline::PldaModel& plda,
                 const pipeline::PipelineConfig& config) {
  Direct d;
  auto networks = RunOfflineNetworks(
      nets, audio, config,
      {.segmentation_batch_size = 1, .embedding_batch_size = 1});
  EXPECT_TRUE(networks.ok()) << networks.status();
  if (!networks.ok()) return d;
  d.segmentations = std::move(networks->segmentations);
  d.embeddings = std::move(networks->embeddings);
  auto out = pipeline::Diarize(d.segmentations, d.embeddings,
                               networks->num_windows, plda, config, {});
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok()) d.output = *std::move(out);
  return d;
}

TEST(EngineCpuTest, BatchedAcrossJobsEqualsOneWindowAtATime) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/engine_models");
  ASSERT_TRUE(
      models::MakeRandomModelDirectory(
          dir, 7, diarization::testing::SharedModelsDir() + "/community-1-plda")
          .ok());
  auto model_dir = models::ModelDirectory::Open(dir);
  ASSERT_TRUE(model_dir.ok()) << model_dir.status();
  auto plda = io::LoadPlda((*model_dir)->plda_dir());
  ASSERT_TRUE(plda.ok()) << plda.status();
  auto shared_plda = std::make_shared<const pipeline::PldaModel>(*plda);

  auto decoded = audio::DecodeFilePath(diarization::testing::TestDataDir() +
                                       "/pyannote-audio/sample/sample.wav");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const std::vector<float>& wav = decoded->samples;
  ASSERT_GE(wav.size(), 25u * 16000);
  // 16.5 s (7 full windows + a padded one) and 14.2 s of later audio.
  const std::vector<float> a(wav.begin(), wav.begin() + 264000);
  const std::vector<float> b(wav.begin() + 8 * 16000 + 123,
                             wav.begin() + 8 * 16000 + 123 + 227200);

  auto engine_nets = MakeCpuDevice(**model_dir, {.threads = 2});
  ASSERT_TRUE(engine_nets.ok()) << engine_nets.status();
  std::vector<Device> devices;
  devices.push_back(*std::move(engine_nets));
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = Metrics::Create(registry, {"test", "test"});
  ASSERT_TRUE(metrics.ok());
  EngineOptions options;
  // Long enough for both jobs' windows to meet in the first batches.
  options.max_batch_wait = absl::Milliseconds(200);
  auto engine =
      Engine::Create(options, std::move(devices), shared_plda, *metrics);
  ASSERT_TRUE(engine.ok()) << engine.status();

  JobOptions job;
  job.return_intermediates = true;
  absl::Notification done_a, done_b;
  absl::StatusOr<JobResult> result_a, result_b;
  ASSERT_TRUE((*engine)
                  ->Submit(job, std::vector<float>(a),
                           {.on_complete =
                                [&](absl::StatusOr<JobResult> r) {
                                  result_a = std::move(r);
                                  done_a.Notify();
                                }})
                  .ok());
  auto stream = (*engine)->StartJob(
      job, {.on_complete = [&](absl::StatusOr<JobResult> r) {
        result_b = std::move(r);
        done_b.Notify();
      }});
  ASSERT_TRUE(stream.ok());
  for (size_t pos = 0; pos < b.size(); pos += 3200) {
    const size_t n = std::min<size_t>(3200, b.size() - pos);
    ASSERT_TRUE((*stream)->Append(std::span<const float>(&b[pos], n)).ok());
  }
  ASSERT_TRUE((*stream)->Finish().ok());
  done_a.WaitForNotification();
  done_b.WaitForNotification();
  ASSERT_TRUE(result_a.ok()) << result_a.status();
  ASSERT_TRUE(result_b.ok()) << result_b.status();

  auto direct_nets = MakeCpuDevice(**model_dir, {.threads = 2});
  ASSERT_TRUE(direct_nets.ok());
  for (const auto& [audio, result, name] :
       {std::tuple(&a, &*result_a, "whole"),
        std::tuple(&b, &*result_b, "stream")}) {
    const Direct d = RunDirect(*direct_nets, *audio, *shared_plda, job.config);
    EXPECT_EQ(result->num_windows * kF * 3,
              static_cast<int>(d.segmentations.size()))
        << name;
    // A window's network outputs do not depend on its batch-mates
    // (cpu_*_model_test), so the engine's batches of up to 32 windows of
    // both jobs give the one-window-at-a-time results bit for bit.
    int differing = 0;
    for (size_t i = 0; i < d.segmentations.size(); ++i) {
      differing += result->segmentations[i] != d.segmentations[i];
    }
    EXPECT_EQ(differing, 0) << name;
    ASSERT_EQ(result->embeddings.size(), d.embeddings.size()) << name;
    double worst = 0.0;
    for (size_t i = 0; i < d.embeddings.size(); ++i) {
      const double diff = std::fabs(result->embeddings[i] - d.embeddings[i]);
      worst = std::max(worst, diff / (std::fabs(d.embeddings[i]) + 1e-3));
    }
    EXPECT_EQ(worst, 0.0) << name;
    EXPECT_EQ(FormatRttm(result->output.segments, "x"),
              FormatRttm(d.output.segments, "x"))
        << name;
    std::fprintf(stderr, "%s: %d windows, worst embedding rel. diff %.2e\n",
                 name, result->num_windows, worst);
  }
  // The engine's batches held windows of both jobs: 8 + 6 windows, and the
  // largest batch is bigger than either job.
  double largest = 0.0;
  for (const auto& family : registry->Collect()) {
    if (family.name != "diarization_batch_size") continue;
    for (const auto& m : family.metric) {
      for (size_t k = 0; k < m.histogram.bucket.size(); ++k) {
        const auto& bucket = m.histogram.bucket[k];
        const uint64_t below =
            k == 0 ? 0 : m.histogram.bucket[k - 1].cumulative_count;
        if (bucket.cumulative_count > below) {
          largest = std::max(largest, bucket.upper_bound);
        }
      }
    }
  }
  EXPECT_GT(largest, 8.0);
}

}  // namespace
}  // namespace diarization::runtime
