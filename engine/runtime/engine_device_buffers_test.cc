// Engine tests. What the engine asks of a device: each stage's batch audio in
// the page-locked buffers the device handed out, and a pipelined embedding
// model given batch k + 1 before batch k ends.
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

using testing::Compute;
using testing::EchoCluster;
using testing::ExpectMatches;
using testing::FakeControl;
using testing::kConcurrentStages;
using testing::kWin;
using testing::MakeRig;
using testing::Outcome;
using testing::RandomAudio;
using testing::Rig;

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

}  // namespace
}  // namespace diarization::runtime
