// The networks pass over one whole recording, outside the engine: every
// window through segmentation, the host step between the networks
// (powerset → multilabel segmentation → embedding masks), every window
// through the embedding model, in batches, on one Device; the result is what
// pipeline::Diarize takes. For callers that hold the whole audio:
// tools/diarize, bench/gpu/rtfx_main, and engine_cpu_test's direct
// reference (docs/adr/0070-one-networks-pass.md).
//
// Made of the device worker's own pieces (device_worker.cc), so that it
// computes what the engine computes and the benchmark times what serves:
//  - the window copy: internal::BatchWindows (batch_windows.h) turns a
//    batch's windows into models::WindowSpans (pipeline::WindowSampleRange
//    says which samples a window holds; on CUDA a batch's audio crosses to
//    the device once, engine/models/cuda_window_upload.h);
//  - the models' RunSpans;
//  - pipeline::WindowMasks (engine/pipeline/embedding_masks.h), once per
//    window after its segmentation batch;
//  - pipeline::SummarizeSegmentation after the last segmentation batch (the
//    engine's jobs leave it to the clustering).
// The worker's batches mix windows of many jobs and it schedules them
// itself; here the batches are windows [first, first + n) of the one
// recording.
//
// Contract:
//  - RunOfflineNetworks calls `device`'s models from the calling thread and,
//    with concurrent_stages, segmentation from one more thread that it
//    starts and joins before returning (each model is still called from one
//    thread at a time, as Device requires). Like the worker, it runs
//    Device::on_worker_start on each thread that calls a model before the
//    first call (an error is returned as is), and on_worker_stop on the
//    thread it started; the calling thread keeps what on_worker_start set
//    (e.g. the current CUDA device).
//  - Batch sizes must be >= 1 (else INVALID_ARGUMENT). The outputs do not
//    depend on concurrent_stages; with a float32 backend they may depend on
//    the batch sizes in the last bits (oneDNN and cuDNN pick kernels per
//    batch size), as the engine's do.
//  - A model's error is returned as it is; no partial output is returned.
#ifndef DIARIZATION_ENGINE_RUNTIME_OFFLINE_NETWORKS_H_
#define DIARIZATION_ENGINE_RUNTIME_OFFLINE_NETWORKS_H_

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/common/crop_edges.h"
#include "engine/models/model_interfaces.h"
#include "engine/pipeline/config.h"
#include "engine/pipeline/segmentation_summary.h"
#include "engine/pipeline/windows.h"
#include "engine/runtime/batch_windows.h"
#include "engine/runtime/device.h"

namespace diarization::runtime {

// Windows of one whole recording as network batches. Holds views of
// `audio`, which must outlive it; not thread-safe (one per stage thread).
class RecordingWindows {
 public:
  // `crop_edges` (may be null): the recording's, for embedding batches
  // (BatchWindows::AddCrop).
  RecordingWindows(std::span<const float> audio,
                   const pipeline::WindowLayout& layout,
                   const CropEdges* crop_edges = nullptr);
  // Windows [first, first + count) as one batch; valid until the next call.
  // Embedding windows are pyannote's crops when the recording has crop
  // edges.
  models::WindowSpans Batch(int first, int count);
  // Gathers the batches in page-locked memory from the device
  // (BatchWindows::UsePinnedBuffer).
  absl::Status UsePinnedBuffer(const Device& device, int max_batch) {
    return windows_.UsePinnedBuffer(device.pinned_host_floats, max_batch);
  }

 private:
  internal::BatchWindows::Recording recording_;
  internal::BatchWindows windows_;
};

struct OfflineNetworksOptions {
  // Windows per segmentation / embedding call (the engine's
  // EngineOptions::segmentation_batch_size / embedding_batch_size).
  int segmentation_batch_size = 32;
  int embedding_batch_size = 32;
  // Segment on a second thread while the calling thread embeds the windows
  // already segmented, as the engine runs a Device with concurrent_stages.
  bool concurrent_stages = false;
  // For audio resampled from another rate: its crop edges
  // (audio::Waveform::crop_edges), so that the embedding windows are
  // pyannote's crops; must outlive the call. Null: none (16 kHz audio).
  const CropEdges* crop_edges = nullptr;
};

struct OfflineNetworksOutput {
  // pipeline::ComputeWindows of the recording under the config.
  int num_windows = 0;
  std::vector<float> segmentations;  // num_windows × 589 × 3
  std::vector<float> embeddings;     // num_windows × 3 × 256
  // pipeline::SummarizeSegmentation of `segmentations`, made once the last
  // segmentation batch is done (with concurrent stages on the segmentation
  // thread, while the embeddings still run): pass it to pipeline::Diarize,
  // which then does not scan the segmentation again.
  pipeline::SegmentationSummary summary;
  // Wall-clock seconds, summed over batches (for benchmarks): the models'
  // calls, the host step, the summary, and the whole pass (with concurrent
  // stages less than the sum).
  double segmentation_s = 0.0;
  double masks_s = 0.0;
  double summary_s = 0.0;
  double embedding_s = 0.0;
  double wall_s = 0.0;
};

absl::StatusOr<OfflineNetworksOutput> RunOfflineNetworks(
    Device& device, std::span<const float> audio,
    const pipeline::PipelineConfig& config,
    const OfflineNetworksOptions& options);

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_OFFLINE_NETWORKS_H_
