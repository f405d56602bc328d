// Every Prometheus metric family of the service, defined once.
//
// The engine records; the server exposes (it owns the HTTP metrics
// endpoint and passes the Registry in). Names follow the
// Prometheus conventions: base units, `_total` for counters, `_seconds` /
// `_bytes` suffixes, lower_snake_case labels.
//
// Families (name, type, labels — meaning; "who" records it):
//
//   diarization_build_info                    gauge    {version, commit}
//       Always 1; the labels say which build runs. Set by Metrics::Create.
//   diarization_requests_total                counter  {method, code}
//       RPCs finished, by gRPC method ("Diarize", "DiarizeFile", "GetInfo")
//       and canonical status code name ("OK", "RESOURCE_EXHAUSTED", ...).
//       Server, through RecordRequest().
//   diarization_jobs_total                    counter  {code}
//       Engine jobs completed, by status code name. One per accepted job
//       (the engine's exactly-once completion). Engine.
//   diarization_audio_seconds_total           counter  {device}
//       Seconds of 16 kHz audio diarized by jobs that completed OK. Engine.
//   diarization_processing_seconds            histogram {stage}
//       Wall seconds of one unit of work by stage: "segmentation" and
//       "embedding" (one network batch), "clustering" (one final host
//       pipeline::Diarize), "partial_clustering" (one provisional
//       Diarize), "decode" (one request's decode + resample; server, through
//       ObserveStageSeconds()). Engine / server.
//   diarization_tail_seconds                  histogram {part}
//       Per job that completed OK: seconds from the end of its audio to the
//       delivery of its result (part = "total"), and each part of it
//       (JobResult::tail, engine.h): "segmentation_wait", "segmentation",
//       "embedding_wait", "embedding" (its last window), "host_wait",
//       "clustering", "delivery". Engine.
//   diarization_request_rtfx                  histogram
//       Per job that completed OK: audio seconds / processing seconds
//       ("times faster than real time"; see JobResult::processing_s). Engine.
//   diarization_device_rtfx                   gauge    {device}
//       Rolling RTFx of each device over the last 30 s of wall time: new
//       audio seconds whose windows finished both networks (one step per
//       window) / seconds the device spent in network batches (the union
//       of overlapping batches when the stages run apart). 0 when idle
//       for 30 s. Engine.
//   diarization_queue_depth                   gauge    {device, queue}
//       Windows waiting in a device's batch queue, queue = "segmentation" |
//       "embedding". Engine.
//   diarization_queue_wait_seconds            histogram {device, queue}
//       Seconds a window waited in a batch queue before its batch started.
//       Engine.
//   diarization_batch_size                    histogram {device, model}
//       Windows per network batch, model = "segmentation" | "embedding"
//       (an embedding batch window carries 3 speaker masks). Engine.
//   diarization_active_jobs                   gauge    {device}
//       Jobs accepted on a device and not yet completed. Engine.
//   diarization_active_streams                gauge
//       Incremental (streaming) jobs open: started and not yet completed.
//       Engine.
//   diarization_backlog_audio_seconds         gauge
//       Admission-control backlog: audio seconds accepted whose windows have
//       not yet finished both networks (new calls are refused above
//       EngineOptions::max_backlog_audio_s; accepted streams are paced).
//       Engine.
//   diarization_job_memory_bytes              gauge
//       Host bytes held by the jobs in the engine (their audio, window
//       outputs and clustering inputs; Engine::job_memory_bytes), refreshed
//       about once a second. EngineOptions::max_job_memory_bytes sheds new
//       calls above it. Engine.
//   diarization_backlog_drain_rate            gauge
//       Audio seconds per second leaving the backlog, measured over the
//       recent time the backlog was not empty (the rate behind retry hints;
//       Engine::drain_rate), refreshed about once a second. Engine.
//   diarization_device_info                   gauge    {device, description,
//                                                     segmentation_precision,
//                                                     embedding_precision}
//       Always 1 per device: what each device is and the precision each
//       network runs at ("fp32", "tf32", "fp64"). Engine, when the device's
//       worker starts.
//   diarization_device_worker_seconds_total   counter  {device, thread, state}
//       Wall seconds of each device worker thread, by what it did. thread =
//       "segmentation" | "embedding" (the stages on their own threads, as
//       on CUDA) | "both" (one thread alternating them, as on the CPU).
//       state = "busy" (in a network batch and its bookkeeping) | "starved"
//       (its queues empty: nothing upstream to do) | "filling" (windows
//       queued, fewer than a batch, the oldest younger than
//       max_batch_wait) | "held" (segmentation waiting while the embedding
//       queue holds a segmentation batch and an embedding batch). Every
//       instant of a thread's life counts once, so the states of a thread
//       add up to its uptime; advanced at least once a second. Engine.
//   diarization_device_gpu_seconds_total      counter  {device, stage}
//       Seconds the device's GPU spent on each stage's batches, stage =
//       "segmentation" | "embedding": CUDA events around each batch on the
//       stage's stream (window upload, kernels, download), from
//       Device::segmentation_gpu_seconds / embedding_gpu_seconds. Next to
//       the worker's "busy" seconds it says how much of a batch's wall time
//       is host work (window staging, masks, delivery) rather than GPU
//       work. It is stream time: while both stages run on the GPU at once,
//       each one's seconds include the time it shared the GPU with the
//       other, so the two may add up to more than the wall time. Devices
//       without those hooks (the CPU) export none. Engine.
//   diarization_device_memory_bytes           gauge    {device, kind}
//       kind = "arena_reserved" | "arena_mapped" | "arena_used" |
//       "arena_peak" | "device_free" | "device_total", from
//       Device::memory_stats, refreshed about once a second. Devices without
//       memory_stats export none. Engine.
#ifndef DIARIZATION_ENGINE_RUNTIME_METRICS_H_
#define DIARIZATION_ENGINE_RUNTIME_METRICS_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/runtime/device.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace diarization::runtime {

enum class Stage {
  kSegmentation,
  kEmbedding,
  kClustering,
  kPartialClustering,
  kDecode,
};
enum class QueueKind { kSegmentation, kEmbedding };
// What a device worker thread is doing
// (diarization_device_worker_seconds_total).
enum class WorkerState { kBusy, kStarved, kFilling, kHeld };

// "segmentation", "embedding", "clustering", "partial_clustering", "decode".
std::string_view StageName(Stage stage);
// "segmentation", "embedding".
std::string_view QueueName(QueueKind queue);
// "busy", "starved", "filling", "held".
std::string_view WorkerStateName(WorkerState state);

struct BuildInfo {
  std::string version;
  std::string commit;
};

// Thread-safe: every method may be called from any thread.
class Metrics {
 public:
  // Registers all families in `registry` (kept alive by Metrics). With the
  // registry's default Merge behaviour a second Metrics on the same registry
  // shares the families. Fails with AlreadyExists when the registry holds one
  // of the names with another type (prometheus-cpp would throw).
  static absl::StatusOr<std::shared_ptr<Metrics>> Create(
      std::shared_ptr<prometheus::Registry> registry, const BuildInfo& build);

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  // --- server side ---
  // One finished RPC. `method` is the gRPC method name without the service.
  void RecordRequest(std::string_view method, absl::StatusCode code);
  // Any stage; the server uses Stage::kDecode.
  void ObserveStageSeconds(Stage stage, double seconds);

  // --- engine side (public so the server and benchmarks may read the same
  // families; ordinary server code does not call these) ---
  void RecordJobCompleted(absl::StatusCode code);
  void AddAudioSeconds(std::string_view device, double seconds);
  void ObserveRequestRtfx(double rtfx);
  // One part of a job's TailTimes (see diarization_tail_seconds).
  void ObserveTailSeconds(std::string_view part, double seconds);
  void SetDeviceRtfx(std::string_view device, double rtfx);
  void SetQueueDepth(std::string_view device, QueueKind queue, double depth);
  void ObserveQueueWait(std::string_view device, QueueKind queue,
                        double seconds);
  void ObserveBatchSize(std::string_view device, QueueKind model, int size);
  // `thread`: "segmentation", "embedding" or "both".
  void AddWorkerSeconds(std::string_view device, std::string_view thread,
                        WorkerState state, double seconds);
  // `stage`: QueueKind's network.
  void AddDeviceGpuSeconds(std::string_view device, QueueKind stage,
                           double seconds);
  void SetActiveJobs(std::string_view device, double jobs);
  void SetActiveStreams(double streams);
  void SetBacklogAudioSeconds(double seconds);
  void SetJobMemoryBytes(double bytes);
  void SetBacklogDrainRate(double audio_s_per_s);
  void SetDeviceMemory(std::string_view device, const DeviceMemoryStats& stats);
  void SetDeviceInfo(std::string_view device, std::string_view description,
                     std::string_view segmentation_precision,
                     std::string_view embedding_precision);

 private:
  explicit Metrics(std::shared_ptr<prometheus::Registry> registry);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Counter>* jobs_ = nullptr;
  prometheus::Family<prometheus::Counter>* audio_seconds_ = nullptr;
  prometheus::Family<prometheus::Histogram>* processing_seconds_ = nullptr;
  prometheus::Family<prometheus::Histogram>* request_rtfx_ = nullptr;
  prometheus::Family<prometheus::Histogram>* tail_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* device_rtfx_ = nullptr;
  prometheus::Family<prometheus::Gauge>* queue_depth_ = nullptr;
  prometheus::Family<prometheus::Histogram>* queue_wait_seconds_ = nullptr;
  prometheus::Family<prometheus::Histogram>* batch_size_ = nullptr;
  prometheus::Family<prometheus::Counter>* worker_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* gpu_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* active_jobs_ = nullptr;
  prometheus::Family<prometheus::Gauge>* active_streams_ = nullptr;
  prometheus::Family<prometheus::Gauge>* backlog_audio_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* job_memory_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* backlog_drain_rate_ = nullptr;
  prometheus::Family<prometheus::Gauge>* device_memory_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* device_info_ = nullptr;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_METRICS_H_
