#include "engine/runtime/offline_networks.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/embedding_masks.h"

namespace diarization::runtime {
namespace {

constexpr int kFrames = models::kFramesPerWindow;
constexpr int kSpeakers = models::kLocalSpeakers;
constexpr size_t kLogProbs = size_t{kFrames} * models::kPowersetClasses;
constexpr size_t kSegmentation = size_t{kFrames} * kSpeakers;
constexpr size_t kMasks = size_t{kSpeakers} * kFrames;
constexpr size_t kEmbeddings = size_t{kSpeakers} * models::kEmbeddingDim;

double SecondsSince(absl::Time start) {
  return absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace

RecordingWindows::RecordingWindows(std::span<const float> audio,
                                   const pipeline::WindowLayout& layout,
                                   const CropEdges* crop_edges)
    : recording_{.id = this,
                 .audio = audio,
                 .offset = 0,
                 .num_samples = static_cast<int64_t>(audio.size()),
                 .step_samples = layout.step_samples,
                 .crop_edges = crop_edges} {}

models::WindowSpans RecordingWindows::Batch(int first, int count) {
  windows_.Clear();
  for (int c = first; c < first + count; ++c) windows_.AddCrop(recording_, c);
  return windows_.spans();
}

absl::StatusOr<OfflineNetworksOutput> RunOfflineNetworks(
    Device& device, std::span<const float> audio,
    const pipeline::PipelineConfig& config,
    const OfflineNetworksOptions& options) {
  const int seg_batch = options.segmentation_batch_size;
  const int emb_batch = options.embedding_batch_size;
  if (seg_batch < 1 || emb_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch sizes must be >= 1, got segmentation ", seg_batch,
                     " and embedding ", emb_batch));
  }
  if (device.segmentation == nullptr || device.embedding == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", device.name, "' lacks a model"));
  }
  const absl::Time start = absl::Now();
  if (device.on_worker_start) RETURN_IF_ERROR(device.on_worker_start());
  const pipeline::WindowLayout layout =
      pipeline::ComputeWindows(static_cast<int64_t>(audio.size()), config);
  const int num_windows = layout.num_windows;
  OfflineNetworksOutput out;
  out.num_windows = num_windows;
  out.segmentations.resize(num_windows * kSegmentation);
  out.embeddings.resize(num_windows * kEmbeddings);
  std::vector<float> masks(num_windows * kMasks);
  // Windows in the segmentation call that starts at window `first`.
  auto seg_batch_at = [&](int first) {
    return std::min(seg_batch, num_windows - first);
  };

  // Segmentation of windows [first, first + n), then each window's host
  // step; only the stage's own thread touches its windows and log_probs.
  RecordingWindows seg_windows(audio, layout);
  std::vector<float> log_probs(seg_batch * kLogProbs);
  auto segment = [&](int first, int n) -> absl::Status {
    const models::WindowSpans spans = seg_windows.Batch(first, n);
    const std::span<float> lp =
        std::span<float>(log_probs).first(n * kLogProbs);
    absl::Time t = absl::Now();
    RETURN_IF_ERROR(device.segmentation->RunSpans(spans, lp));
    out.segmentation_s += SecondsSince(t);
    t = absl::Now();
    for (int i = 0; i < n; ++i) {
      const size_t c = static_cast<size_t>(first + i);
      RETURN_IF_ERROR(pipeline::WindowMasks(
          lp.subspan(i * kLogProbs, kLogProbs), config,
          std::span<float>(out.segmentations)
              .subspan(c * kSegmentation, kSegmentation),
          std::span<float>(masks).subspan(c * kMasks, kMasks)));
    }
    out.masks_s += SecondsSince(t);
    return absl::OkStatus();
  };
  // After the last segmentation batch: what the clustering needs of the
  // segmentation alone.
  auto summarize = [&]() -> absl::Status {
    const absl::Time t = absl::Now();
    ASSIGN_OR_RETURN(out.summary, pipeline::SummarizeSegmentation(
                                      out.segmentations, num_windows, config));
    out.summary_s = SecondsSince(t);
    return absl::OkStatus();
  };
  // Embedding batches through StartSpans/FinishSpans, as the engine's
  // embedding thread runs them: batch k + 1 starts before batch k is
  // finished, so a pipelined model (CUDA) has the next batch queued on the
  // device while the host waits for the current one. Each of the two
  // batches in flight has its own window buffer (its audio must stay
  // unchanged until it is finished).
  RecordingWindows emb_windows[2] = {
      RecordingWindows(audio, layout, options.crop_edges),
      RecordingWindows(audio, layout, options.crop_edges)};
  // As the device worker does (device_worker.cc).
  for (auto [windows, batch] : {std::pair{&seg_windows, seg_batch},
                                std::pair{&emb_windows[0], emb_batch},
                                std::pair{&emb_windows[1], emb_batch}}) {
    RETURN_IF_ERROR(windows->UsePinnedBuffer(device, batch));
  }
  int in_flight = 0, next_buffer = 0;
  auto finish = [&]() -> absl::Status {
    const absl::Time t = absl::Now();
    absl::Status s = device.embedding->FinishSpans();
    --in_flight;
    out.embedding_s += SecondsSince(t);
    return s;
  };
  auto embed = [&](int first, int n) -> absl::Status {
    const models::WindowSpans spans = emb_windows[next_buffer].Batch(first, n);
    next_buffer = 1 - next_buffer;
    const absl::Time t = absl::Now();
    RETURN_IF_ERROR(device.embedding->StartSpans(
        spans,
        std::span<const float>(masks).subspan(first * kMasks, n * kMasks),
        kSpeakers,
        std::span<float>(out.embeddings)
            .subspan(first * kEmbeddings, n * kEmbeddings)));
    ++in_flight;
    out.embedding_s += SecondsSince(t);
    return in_flight == 2 ? finish() : absl::OkStatus();
  };
  // Finishes every started batch (also after an error, so that the model
  // is left with none): the first error.
  auto drain = [&]() -> absl::Status {
    absl::Status first_error;
    while (in_flight > 0) {
      absl::Status s = finish();
      if (first_error.ok()) first_error = s;
    }
    return first_error;
  };

  if (!options.concurrent_stages) {
    for (int first = 0, n; first < num_windows; first += n) {
      n = seg_batch_at(first);
      RETURN_IF_ERROR(segment(first, n));
    }
    RETURN_IF_ERROR(summarize());
    absl::Status status;
    for (int first = 0; status.ok() && first < num_windows;
         first += emb_batch) {
      status = embed(first, std::min(emb_batch, num_windows - first));
    }
    const absl::Status drained = drain();
    RETURN_IF_ERROR(status);
    RETURN_IF_ERROR(drained);
    out.wall_s = SecondsSince(start);
    return std::move(out);
  }

  // Concurrent stages: the segmentation thread publishes how many windows
  // have their masks (under `mu`, which orders its writes of the masks
  // before the embedding stage's reads); the embedding stage waits for its
  // batch's windows.
  absl::Mutex mu;
  int segmented = 0;        // guarded by mu
  bool seg_done = false;    // guarded by mu
  bool stop = false;        // guarded by mu: the embedding stage failed
  absl::Status seg_status;  // written before seg_done, read after join
  std::thread seg_thread([&] {
    absl::Status status =
        device.on_worker_start ? device.on_worker_start() : absl::OkStatus();
    int done = 0;  // windows segmented by this thread
    for (int first = 0, n; status.ok() && first < num_windows; first += n) {
      {
        absl::MutexLock lock(&mu);
        if (stop) break;
      }
      n = seg_batch_at(first);
      status = segment(first, n);
      if (!status.ok()) break;
      done = first + n;
      absl::MutexLock lock(&mu);
      segmented = done;
    }
    // The embedding stage only reads the masks, so this overlaps it (not
    // after a stop: the pass has failed).
    if (status.ok() && done == num_windows) status = summarize();
    if (device.on_worker_stop) device.on_worker_stop();
    seg_status = status;
    absl::MutexLock lock(&mu);
    seg_done = true;
  });
  absl::Status emb_status;
  for (int first = 0; first < num_windows; first += emb_batch) {
    const int n = std::min(emb_batch, num_windows - first);
    {
      absl::MutexLock lock(&mu);
      auto ready = [&] { return segmented >= first + n || seg_done; };
      mu.Await(absl::Condition(&ready));
      if (segmented < first + n) break;  // segmentation failed
    }
    emb_status = embed(first, n);
    if (!emb_status.ok()) break;
  }
  const absl::Status drained = drain();
  if (emb_status.ok()) emb_status = drained;
  {
    absl::MutexLock lock(&mu);
    stop = true;
  }
  seg_thread.join();
  RETURN_IF_ERROR(seg_status);
  RETURN_IF_ERROR(emb_status);
  out.wall_s = SecondsSince(start);
  return std::move(out);
}

}  // namespace diarization::runtime
