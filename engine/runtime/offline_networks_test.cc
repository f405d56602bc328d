// The offline networks pass with the fake networks (fake_models.h), against
// a reference written out here window by window: pyannote's zero-padded
// windows cut from the audio, the fake segmentation's class per frame, the
// powerset table of 3 speakers / 2 per frame, the overlap-free masks with
// their fallback, and the fake embedding of each mask. Fresh random audio,
// lengths and batch sizes each run; both stage modes.
#include "engine/runtime/offline_networks.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "engine/runtime/fake_models.h"
#include "gtest/gtest.h"

namespace diarization::runtime {
namespace {

constexpr int kW = models::kWindowSamples;
constexpr int kF = models::kFramesPerWindow;
constexpr int kD = models::kEmbeddingDim;
// pyannote Powerset(3, 2).mapping: class → active speakers.
constexpr int kSpeakersOf[7][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1},
                                   {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};

struct Reference {
  int num_windows = 0;
  std::vector<float> segmentations, embeddings;
};

Reference Expected(const std::vector<float>& audio, int64_t step) {
  Reference r;
  const int64_t n = static_cast<int64_t>(audio.size());
  // pyannote `slide`: full windows every step, plus a padded last one when
  // samples remain (or the audio is shorter than a window).
  int full = n >= kW ? static_cast<int>(1 + (n - kW) / step) : 0;
  r.num_windows = full + ((n < kW || (n - kW) % step > 0) ? 1 : 0);
  for (int c = 0; c < r.num_windows; ++c) {
    std::vector<float> window(kW, 0.0f);
    for (int64_t j = 0; j < kW && c * step + j < n; ++j) {
      window[j] = audio[c * step + j];
    }
    std::vector<float> seg(kF * 3);
    for (int f = 0; f < kF; ++f) {
      const int cls = testing::FakeClass(window[f * testing::kFakeProbeStride]);
      for (int s = 0; s < 3; ++s) seg[f * 3 + s] = kSpeakersOf[cls][s];
    }
    r.segmentations.insert(r.segmentations.end(), seg.begin(), seg.end());
    for (int s = 0; s < 3; ++s) {
      // exclude_overlap: frames where this speaker talks alone, unless that
      // leaves 2 frames or fewer (then the plain column).
      std::vector<float> mask(kF);
      int clean = 0;
      for (int f = 0; f < kF; ++f) {
        const float total = seg[f * 3] + seg[f * 3 + 1] + seg[f * 3 + 2];
        mask[f] = total < 2.0f ? seg[f * 3 + s] : 0.0f;
        clean += mask[f] > 0.0f;
      }
      if (clean <= 2) {
        for (int f = 0; f < kF; ++f) mask[f] = seg[f * 3 + s];
      }
      std::vector<float> emb(kD);
      testing::FakeEmbedding(window.data(), mask.data(), emb.data());
      r.embeddings.insert(r.embeddings.end(), emb.begin(), emb.end());
    }
  }
  return r;
}

// Runs of 0.1–2 s at levels that the fake segmentation reads as a class
// (silence, one speaker, or an overlap of two).
std::vector<float> RandomAudio(std::mt19937& rng, int64_t samples) {
  std::vector<float> audio;
  audio.reserve(samples);
  while (static_cast<int64_t>(audio.size()) < samples) {
    const float level = (static_cast<float>(rng() % 7) + 0.5f) / 7.0f;
    const int64_t run = 1600 + rng() % 30400;
    for (int64_t i = 0; i < run && static_cast<int64_t>(audio.size()) < samples;
         ++i) {
      audio.push_back(rng() % 2 ? level : -level);
    }
  }
  return audio;
}

Device FakeDevice(std::shared_ptr<testing::FakeControl> control) {
  Device d;
  d.name = "fake";
  d.segmentation = std::make_unique<testing::FakeSegmentationModel>(control);
  d.embedding = std::make_unique<testing::FakeEmbeddingModel>(control);
  return d;
}

TEST(OfflineNetworksTest, EqualsTheWindowByWindowReference) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 8; ++round) {
    pipeline::PipelineConfig config;
    config.step_samples = round % 2 ? 16000 : 8000 + rng() % 40000;
    // 0.5 s to 40 s: from one padded window to dozens.
    const std::vector<float> audio =
        RandomAudio(rng, 8000 + rng() % (40 * 16000));
    const Reference want = Expected(audio, config.step_samples);
    auto control = std::make_shared<testing::FakeControl>();
    Device device = FakeDevice(control);
    const OfflineNetworksOptions options{
        .segmentation_batch_size = 1 + static_cast<int>(rng() % 9),
        .embedding_batch_size = 1 + static_cast<int>(rng() % 9),
        .concurrent_stages = round % 4 >= 2};
    // Rounds 4-7: the batches gather their audio in memory the device gives
    // (Device::pinned_host_floats), the segmentation's and one per
    // embedding batch in flight, as the engine's worker does; and the
    // embedding model is pipelined (it reads a batch's audio only when the
    // batch is finished, so the two batches in flight need their own).
    std::vector<size_t> asked;
    testing::FakePipelinedEmbedding* pipelined = nullptr;
    if (round >= 4) {
      auto model = std::make_unique<testing::FakePipelinedEmbedding>(
          std::move(device.embedding));
      pipelined = model.get();
      device.embedding = std::move(model);
      device.pinned_host_floats =
          [&asked](size_t floats) -> absl::StatusOr<std::shared_ptr<float[]>> {
        asked.push_back(floats);
        return std::shared_ptr<float[]>(new float[floats]);
      };
    }
    auto got = RunOfflineNetworks(device, audio, config, options);
    ASSERT_TRUE(got.ok()) << got.status();
    if (round >= 4) {
      EXPECT_EQ(asked, (std::vector<size_t>{
                           size_t(options.segmentation_batch_size) * kW,
                           size_t(options.embedding_batch_size) * kW,
                           size_t(options.embedding_batch_size) * kW}));
      // Two in flight whenever there are two batches.
      EXPECT_EQ(pipelined->most_in_flight(),
                want.num_windows > options.embedding_batch_size ? 2 : 1);
    }
    ASSERT_EQ(got->num_windows, want.num_windows);
    EXPECT_EQ(got->segmentations, want.segmentations) << "round " << round;
    EXPECT_EQ(got->embeddings, want.embeddings) << "round " << round;
    // The pass's summary is the reference segmentation's.
    auto summary = pipeline::SummarizeSegmentation(want.segmentations,
                                                   want.num_windows, config);
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(got->summary.num_windows, want.num_windows);
    EXPECT_EQ(got->summary.grid.window_offset, summary->grid.window_offset);
    EXPECT_EQ(got->summary.count, summary->count) << "round " << round;
    EXPECT_EQ(got->summary.inactive, summary->inactive) << "round " << round;
    EXPECT_EQ(got->summary.clean.window_idx, summary->clean.window_idx);
    EXPECT_EQ(got->summary.clean.speaker_idx, summary->clean.speaker_idx);
    // Batches of the requested size, the last one holding the rest.
    for (const auto& [seen, size] : {std::pair(control->segmentation_batches(),
                                               options.segmentation_batch_size),
                                     std::pair(control->embedding_batches(),
                                               options.embedding_batch_size)}) {
      std::vector<int> expected;
      for (int left = want.num_windows; left > 0; left -= expected.back()) {
        expected.push_back(std::min(size, left));
      }
      EXPECT_EQ(seen, expected) << "round " << round << ", batch " << size;
    }
  }
}

TEST(OfflineNetworksTest, AModelErrorIsReturnedInBothModes) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<float> audio = RandomAudio(rng, 30 * 16000);
  for (bool concurrent : {false, true}) {
    auto control = std::make_shared<testing::FakeControl>();
    control->SetFailure(absl::UnavailableError("device lost"));
    Device device = FakeDevice(control);
    auto got = RunOfflineNetworks(device, audio, pipeline::PipelineConfig(),
                                  {.segmentation_batch_size = 4,
                                   .embedding_batch_size = 4,
                                   .concurrent_stages = concurrent});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(got.status().message().find("device lost"),
              absl::string_view::npos);
  }
}

TEST(OfflineNetworksTest, RejectsBatchSizesOutOfRange) {
  auto control = std::make_shared<testing::FakeControl>();
  Device device = FakeDevice(control);
  const std::vector<float> audio(16000, 0.0f);
  for (const auto& [seg, emb] : {std::pair(0, 4), std::pair(4, 0)}) {
    auto got = RunOfflineNetworks(
        device, audio, pipeline::PipelineConfig(),
        {.segmentation_batch_size = seg, .embedding_batch_size = emb});
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << seg << " " << emb;
  }
  EXPECT_TRUE(control->segmentation_batches().empty());
}

TEST(OfflineNetworksTest, RunsTheWorkerStartHookOnEachModelThread) {
  auto control = std::make_shared<testing::FakeControl>();
  Device device = FakeDevice(control);
  std::atomic<int> starts{0};
  device.on_worker_start = [&] {
    ++starts;
    return absl::OkStatus();
  };
  const std::vector<float> audio(20 * 16000, 0.3f);
  ASSERT_TRUE(RunOfflineNetworks(device, audio, pipeline::PipelineConfig(),
                                 {.concurrent_stages = false})
                  .ok());
  EXPECT_EQ(starts.load(), 1);
  ASSERT_TRUE(RunOfflineNetworks(device, audio, pipeline::PipelineConfig(),
                                 {.concurrent_stages = true})
                  .ok());
  EXPECT_EQ(starts.load(), 3);
  // A failing hook fails the pass before any model runs.
  device.on_worker_start = [] { return absl::InternalError("no device"); };
  auto got = RunOfflineNetworks(device, audio, pipeline::PipelineConfig(), {});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace diarization::runtime
