#include "engine/runtime/metrics.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace diarization::runtime {
namespace {

using prometheus::Histogram;

// Seconds of one stage unit: 0.5 ms .. ~131 s, ×2 per bucket.
Histogram::BucketBoundaries SecondsBuckets() {
  Histogram::BucketBoundaries b;
  for (double v = 0.0005; v < 140.0; v *= 2.0) b.push_back(v);
  return b;
}

// Queue waits are short: 0.1 ms .. ~52 s.
Histogram::BucketBoundaries WaitBuckets() {
  Histogram::BucketBoundaries b;
  for (double v = 0.0001; v < 60.0; v *= 2.0) b.push_back(v);
  return b;
}

Histogram::BucketBoundaries RtfxBuckets() {
  return {0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
}

Histogram::BucketBoundaries BatchBuckets() {
  return {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256};
}

std::string Name(std::string_view s) { return std::string(s); }

}  // namespace

std::string_view StageName(Stage stage) {
  switch (stage) {
    case Stage::kSegmentation:
      return "segmentation";
    case Stage::kEmbedding:
      return "embedding";
    case Stage::kClustering:
      return "clustering";
    case Stage::kPartialClustering:
      return "partial_clustering";
    case Stage::kDecode:
      return "decode";
  }
  return "unknown";
}

std::string_view QueueName(QueueKind queue) {
  return queue == QueueKind::kSegmentation ? "segmentation" : "embedding";
}

std::string_view WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kBusy:
      return "busy";
    case WorkerState::kStarved:
      return "starved";
    case WorkerState::kFilling:
      return "filling";
    case WorkerState::kHeld:
      return "held";
  }
  return "unknown";
}

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {}

absl::StatusOr<std::shared_ptr<Metrics>> Metrics::Create(
    std::shared_ptr<prometheus::Registry> registry, const BuildInfo& build) {
  if (registry == nullptr) {
    return absl::InvalidArgumentError("Metrics::Create: registry is null");
  }
  std::shared_ptr<Metrics> m(new Metrics(registry));
  prometheus::Registry& r = *registry;
  // prometheus-cpp reports name clashes by throwing; keep exceptions inside.
  try {
    m->build_info_ = &prometheus::BuildGauge()
                          .Name("diarization_build_info")
                          .Help("Always 1; labels name the running build.")
                          .Register(r);
    m->requests_ = &prometheus::BuildCounter()
                        .Name("diarization_requests_total")
                        .Help("RPCs finished, by method and status code.")
                        .Register(r);
    m->jobs_ = &prometheus::BuildCounter()
                    .Name("diarization_jobs_total")
                    .Help("Engine jobs completed, by status code.")
                    .Register(r);
    m->audio_seconds_ =
        &prometheus::BuildCounter()
             .Name("diarization_audio_seconds_total")
             .Help("Seconds of audio diarized by jobs that completed OK.")
             .Register(r);
    m->processing_seconds_ =
        &prometheus::BuildHistogram()
             .Name("diarization_processing_seconds")
             .Help("Wall seconds of one unit of work, by stage.")
             .Register(r);
    m->request_rtfx_ =
        &prometheus::BuildHistogram()
             .Name("diarization_request_rtfx")
             .Help("Per job: audio seconds / processing seconds.")
             .Register(r);
    m->tail_seconds_ =
        &prometheus::BuildHistogram()
             .Name("diarization_tail_seconds")
             .Help(
                 "Per job: seconds from the end of its audio to its "
                 "result's delivery, and each part of it.")
             .Register(r);
    m->device_rtfx_ = &prometheus::BuildGauge()
                           .Name("diarization_device_rtfx")
                           .Help("Rolling RTFx of a device over the last 30 s.")
                           .Register(r);
    m->queue_depth_ = &prometheus::BuildGauge()
                           .Name("diarization_queue_depth")
                           .Help("Windows waiting in a device batch queue.")
                           .Register(r);
    m->queue_wait_seconds_ =
        &prometheus::BuildHistogram()
             .Name("diarization_queue_wait_seconds")
             .Help("Seconds a window waited before its batch started.")
             .Register(r);
    m->batch_size_ = &prometheus::BuildHistogram()
                          .Name("diarization_batch_size")
                          .Help("Windows per network batch, by model.")
                          .Register(r);
    m->worker_seconds_ =
        &prometheus::BuildCounter()
             .Name("diarization_device_worker_seconds_total")
             .Help(
                 "Wall seconds of each device worker thread by state: busy, "
                 "starved (queues empty), filling (less than a batch), held "
                 "(segmentation waiting for the embedding stage).")
             .Register(r);
    m->gpu_seconds_ =
        &prometheus::BuildCounter()
             .Name("diarization_device_gpu_seconds_total")
             .Help(
                 "Seconds the device's GPU spent on each stage's batches "
                 "(CUDA events around each batch: upload, kernels, "
                 "download).")
             .Register(r);
    m->active_jobs_ = &prometheus::BuildGauge()
                           .Name("diarization_active_jobs")
                           .Help("Jobs accepted on a device, not completed.")
                           .Register(r);
    m->active_streams_ =
        &prometheus::BuildGauge()
             .Name("diarization_active_streams")
             .Help("Streaming jobs started and not yet completed.")
             .Register(r);
    m->backlog_audio_seconds_ =
        &prometheus::BuildGauge()
             .Name("diarization_backlog_audio_seconds")
             .Help("Audio seconds accepted, not yet through both networks.")
             .Register(r);
    m->job_memory_bytes_ = &prometheus::BuildGauge()
                                .Name("diarization_job_memory_bytes")
                                .Help("Host bytes held by the engine's jobs.")
                                .Register(r);
    m->backlog_drain_rate_ =
        &prometheus::BuildGauge()
             .Name("diarization_backlog_drain_rate")
             .Help(
                 "Audio seconds per second leaving the backlog while it is "
                 "not empty.")
             .Register(r);
    m->device_memory_bytes_ =
        &prometheus::BuildGauge()
             .Name("diarization_device_memory_bytes")
             .Help("Device memory by kind (arena and whole device).")
             .Register(r);
    m->device_info_ =
        &prometheus::BuildGauge()
             .Name("diarization_device_info")
             .Help(
                 "Always 1: each device, what it is and the precision of "
                 "each network on it.")
             .Register(r);
    m->build_info_->Add({{"version", build.version}, {"commit", build.commit}})
        .Set(1.0);
    // Label-free series exist from the start, so a scrape shows zeros.
    m->active_streams_->Add({});
    m->backlog_audio_seconds_->Add({});
    m->job_memory_bytes_->Add({});
    m->backlog_drain_rate_->Add({});
  } catch (const std::exception& e) {
    return absl::AlreadyExistsError(absl::StrCat(
        "cannot register the diarization metric families: ", e.what()));
  }
  return m;
}

void Metrics::RecordRequest(std::string_view method, absl::StatusCode code) {
  requests_
      ->Add(
          {{"method", Name(method)}, {"code", absl::StatusCodeToString(code)}})
      .Increment();
}

void Metrics::ObserveStageSeconds(Stage stage, double seconds) {
  processing_seconds_
      ->Add({{"stage", Name(StageName(stage))}}, SecondsBuckets())
      .Observe(seconds);
}

void Metrics::RecordJobCompleted(absl::StatusCode code) {
  jobs_->Add({{"code", absl::StatusCodeToString(code)}}).Increment();
}

void Metrics::AddAudioSeconds(std::string_view device, double seconds) {
  audio_seconds_->Add({{"device", Name(device)}}).Increment(seconds);
}

void Metrics::ObserveRequestRtfx(double rtfx) {
  request_rtfx_->Add({}, RtfxBuckets()).Observe(rtfx);
}

void Metrics::ObserveTailSeconds(std::string_view part, double seconds) {
  tail_seconds_->Add({{"part", Name(part)}}, WaitBuckets()).Observe(seconds);
}

void Metrics::SetDeviceRtfx(std::string_view device, double rtfx) {
  device_rtfx_->Add({{"device", Name(device)}}).Set(rtfx);
}

void Metrics::SetQueueDepth(std::string_view device, QueueKind queue,
                            double depth) {
  queue_depth_
      ->Add({{"device", Name(device)}, {"queue", Name(QueueName(queue))}})
      .Set(depth);
}

void Metrics::ObserveQueueWait(std::string_view device, QueueKind queue,
                               double seconds) {
  queue_wait_seconds_
      ->Add({{"device", Name(device)}, {"queue", Name(QueueName(queue))}},
            WaitBuckets())
      .Observe(seconds);
}

void Metrics::ObserveBatchSize(std::string_view device, QueueKind model,
                               int size) {
  batch_size_
      ->Add({{"device", Name(device)}, {"model", Name(QueueName(model))}},
            BatchBuckets())
      .Observe(size);
}

void Metrics::AddWorkerSeconds(std::string_view device, std::string_view thread,
                               WorkerState state, double seconds) {
  worker_seconds_
      ->Add({{"device", Name(device)},
             {"thread", Name(thread)},
             {"state", Name(WorkerStateName(state))}})
      .Increment(seconds);
}

void Metrics::AddDeviceGpuSeconds(std::string_view device, QueueKind stage,
                                  double seconds) {
  gpu_seconds_
      ->Add({{"device", Name(device)}, {"stage", Name(QueueName(stage))}})
      .Increment(seconds);
}

void Metrics::SetActiveJobs(std::string_view device, double jobs) {
  active_jobs_->Add({{"device", Name(device)}}).Set(jobs);
}

void Metrics::SetActiveStreams(double streams) {
  active_streams_->Add({}).Set(streams);
}

void Metrics::SetBacklogAudioSeconds(double seconds) {
  backlog_audio_seconds_->Add({}).Set(seconds);
}

void Metrics::SetJobMemoryBytes(double bytes) {
  job_memory_bytes_->Add({}).Set(bytes);
}

void Metrics::SetBacklogDrainRate(double audio_s_per_s) {
  backlog_drain_rate_->Add({}).Set(audio_s_per_s);
}

void Metrics::SetDeviceMemory(std::string_view device,
                              const DeviceMemoryStats& stats) {
  const std::pair<const char*, uint64_t> kinds[] = {
      {"arena_reserved", stats.arena_reserved_bytes},
      {"arena_mapped", stats.arena_mapped_bytes},
      {"arena_used", stats.arena_used_bytes},
      {"arena_peak", stats.arena_peak_bytes},
      {"device_free", stats.device_free_bytes},
      {"device_total", stats.device_total_bytes},
  };
  for (const auto& [kind, bytes] : kinds) {
    device_memory_bytes_->Add({{"device", Name(device)}, {"kind", kind}})
        .Set(static_cast<double>(bytes));
  }
}

void Metrics::SetDeviceInfo(std::string_view device,
                            std::string_view description,
                            std::string_view segmentation_precision,
                            std::string_view embedding_precision) {
  device_info_
      ->Add({{"device", Name(device)},
             {"description", Name(description)},
             {"segmentation_precision", Name(segmentation_precision)},
             {"embedding_precision", Name(embedding_precision)}})
      .Set(1.0);
}

}  // namespace diarization::runtime
