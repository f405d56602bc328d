#include "engine/runtime/engine_test_rig.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace diarization::runtime::testing {

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
  return FakeSpeakerAudio(num_samples, Rng());
}

// ---------------------------------------- expected outputs, independently --

int NumWindows(int64_t n, int64_t step) {
  if (n < kWin) return 1;
  const int64_t full = 1 + (n - kWin) / step;
  return static_cast<int>(full + ((n - kWin) % step > 0 ? 1 : 0));
}

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

// engine_*_concurrent_stages_test link this file built with
// ENGINE_TEST_CONCURRENT_STAGES=true.
#ifndef ENGINE_TEST_CONCURRENT_STAGES
#define ENGINE_TEST_CONCURRENT_STAGES false
#endif
const bool kConcurrentStages = ENGINE_TEST_CONCURRENT_STAGES;

Rig MakeRig(
    EngineOptions options, int num_devices,
    std::shared_ptr<const pipeline::PldaModel> plda,
    std::function<DeviceMemoryStats()> memory,
    std::function<void(Device&, std::shared_ptr<FakeControl>)> customize) {
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
    d.segmentation = std::make_unique<FakeSegmentationModel>(control);
    d.embedding = std::make_unique<FakeEmbeddingModel>(control);
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

bool Eventually(const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}
}  // namespace diarization::runtime::testing
