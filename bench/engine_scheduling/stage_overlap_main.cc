// How well the engine's device worker overlaps its two stages, on a
// simulated device: the fake networks (engine/runtime/fake_models.h) sleep
// a cost per window for each stage, so a batch of n windows takes
// n × per-window cost, as on a GPU whose batch time grows with the batch.
// `jobs` recordings of `seconds` each are submitted at once (as 64 uploads,
// or 64 streams sent as fast as flow control allows), with the two stages
// on their own threads (Device::concurrent_stages, as on CUDA).
//
//   stage_overlap --jobs 64 --seconds 60 --seg_ms 1.16 --emb_ms 1.70
//       [--seg_batch 128] [--emb_batch 32]
//
// Prints one JSON object: the wall time, each stage's simulated busy time
// (the sum of its sleeps), the best possible wall (the slower stage busy
// all the time) and the worst (the stages in turn), and the embedding
// stage's share of the wall time. What it leaves out: the real device's
// stages also slow each other down when they overlap (they share the SMs),
// so on a GPU the gain from overlapping is smaller than here.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/fake_models.h"
#include "engine/runtime/metrics.h"
#include "prometheus/registry.h"
#include "testing/metric_value.h"

ABSL_FLAG(int, jobs, 64, "Recordings submitted at once.");
ABSL_FLAG(double, seconds, 60, "Length of each recording.");
ABSL_FLAG(double, seg_ms, 1.16, "Simulated segmentation cost per window.");
ABSL_FLAG(double, emb_ms, 1.70, "Simulated embedding cost per window.");
ABSL_FLAG(int, seg_batch, 128, "Segmentation batch (the CUDA default).");
ABSL_FLAG(int, emb_batch, 32, "Embedding batch (the server default).");

namespace {

using namespace diarization;

// The host stages are not what is measured: a result of the right shape.
absl::StatusOr<pipeline::DiarizationOutput> NoClustering(
    std::span<const float>, std::span<const float>, int num_windows,
    const pipeline::PipelineConfig&, const pipeline::SpeakerHints&) {
  pipeline::DiarizationOutput out;
  out.labels = {std::to_string(num_windows)};
  return out;
}

absl::Status Run() {
  const int jobs = absl::GetFlag(FLAGS_jobs);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (jobs < 1 || seconds < 10) {
    return absl::InvalidArgumentError("--jobs >= 1 and --seconds >= 10");
  }
  auto control = std::make_shared<runtime::testing::FakeControl>();
  const absl::Duration seg_cost =
      absl::Microseconds(1000 * absl::GetFlag(FLAGS_seg_ms));
  const absl::Duration emb_cost =
      absl::Microseconds(1000 * absl::GetFlag(FLAGS_emb_ms));
  control->SetPerWindowDelays(seg_cost, emb_cost);

  std::vector<runtime::Device> devices(1);
  devices[0].name = "simulated:0";
  devices[0].description = "fake networks with a cost per window";
  devices[0].segmentation =
      std::make_unique<runtime::testing::FakeSegmentationModel>(control);
  devices[0].embedding =
      std::make_unique<runtime::testing::FakeEmbeddingModel>(control);
  devices[0].concurrent_stages = true;
  runtime::EngineOptions options;
  options.segmentation_batch_size = absl::GetFlag(FLAGS_seg_batch);
  options.embedding_batch_size = absl::GetFlag(FLAGS_emb_batch);
  options.max_backlog_audio_s = jobs * seconds + 1;
  options.cluster_function = NoClustering;
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = runtime::Metrics::Create(registry, {"bench", "bench"});
  if (!metrics.ok()) return metrics.status();
  auto engine = runtime::Engine::Create(std::move(options), std::move(devices),
                                        nullptr, *metrics);
  if (!engine.ok()) return engine.status();

  // Level of the fake's "nobody speaks" class: empty masks keep the fake
  // embedding's own arithmetic out of the simulated cost.
  const std::vector<float> audio(static_cast<size_t>(seconds * 16000),
                                 0.5f / 7.0f);
  absl::BlockingCounter done(jobs);
  absl::Mutex mu;
  absl::Status first_error;
  std::vector<std::unique_ptr<runtime::Job>> handles;
  const absl::Time start = absl::Now();
  for (int j = 0; j < jobs; ++j) {
    runtime::JobCallbacks cb;
    cb.on_complete = [&](absl::StatusOr<runtime::JobResult> r) {
      if (!r.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = r.status();
      }
      done.DecrementCount();
    };
    auto job = (*engine)->Submit(runtime::JobOptions{},
                                 std::vector<float>(audio), std::move(cb));
    if (!job.ok()) return job.status();
    handles.push_back(*std::move(job));
  }
  done.Wait();
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  {
    absl::MutexLock lock(&mu);
    if (!first_error.ok()) return first_error;
  }
  const std::vector<int> seg_batches = control->segmentation_batches();
  const std::vector<int> emb_batches = control->embedding_batches();
  const int seg_windows =
      std::accumulate(seg_batches.begin(), seg_batches.end(), 0);
  const int emb_windows =
      std::accumulate(emb_batches.begin(), emb_batches.end(), 0);
  // Each stage's time as the worker measured it (the sleeps plus the fakes'
  // own work and the window copies, which also run on the stage's thread).
  const double seg_busy = diarization::testing::MetricValue(
      *registry, "diarization_processing_seconds", {{"stage", "segmentation"}});
  const double emb_busy = diarization::testing::MetricValue(
      *registry, "diarization_processing_seconds", {{"stage", "embedding"}});
  const double seg_sleep = seg_windows * absl::ToDoubleSeconds(seg_cost);
  const double emb_sleep = emb_windows * absl::ToDoubleSeconds(emb_cost);
  std::printf(
      "{\"jobs\":%d,\"seconds\":%.0f,\"seg_batch\":%d,\"emb_batch\":%d,"
      "\"windows\":%d,\"segmentation_batches\":%zu,\"embedding_batches\":%zu,"
      "\"wall_s\":%.3f,\"segmentation_busy_s\":%.3f,"
      "\"embedding_busy_s\":%.3f,\"segmentation_simulated_s\":%.3f,"
      "\"embedding_simulated_s\":%.3f,\"best_wall_s\":%.3f,"
      "\"worst_wall_s\":%.3f,\"embedding_busy_share\":%.3f}\n",
      jobs, seconds, absl::GetFlag(FLAGS_seg_batch),
      absl::GetFlag(FLAGS_emb_batch), seg_windows, seg_batches.size(),
      emb_batches.size(), wall, seg_busy, emb_busy, seg_sleep, emb_sleep,
      std::max(seg_busy, emb_busy), seg_busy + emb_busy, emb_busy / wall);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "stage_overlap: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
