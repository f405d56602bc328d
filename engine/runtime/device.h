// A device as the engine sees it: a name, the two pre-loaded networks that
// run on it, and optional hooks for its memory statistics and its worker
// thread. The engine runs one worker per Device; each model is only ever
// called from one worker thread at a time (they are thread-compatible,
// engine/models/model_interfaces.h).
//
// The CPU backend is one Device ("cpu") whose models use their own thread
// count; the CUDA backend gives one Device per GPU ("cuda:0", "cuda:1", ...),
// each with its own models, weights resident, and memory from that GPU's
// arena (engine/models/device_arena.h).
#ifndef DIARIZATION_ENGINE_RUNTIME_DEVICE_H_
#define DIARIZATION_ENGINE_RUNTIME_DEVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/model_interfaces.h"
#include "engine/pipeline/ahc.h"

namespace diarization::runtime {

// A snapshot of one device's memory, in bytes. Fields a device cannot report
// stay 0 (the CPU device reports none of them).
struct DeviceMemoryStats {
  // The device arena (GPU only): address space reserved, physical memory
  // mapped into it, bytes handed out now, and the high-water mark of used.
  uint64_t arena_reserved_bytes = 0;
  uint64_t arena_mapped_bytes = 0;
  uint64_t arena_used_bytes = 0;
  uint64_t arena_peak_bytes = 0;
  // cudaMemGetInfo of the whole device.
  uint64_t device_free_bytes = 0;
  uint64_t device_total_bytes = 0;
};

struct Device {
  // "cpu", "cuda:0", ...; unique within an engine. Used as the `device`
  // label of metrics and in every JobResult.
  std::string name;
  // Human-readable, e.g. "NVIDIA H200 (sm_90)" or "x86_64, 8 threads".
  std::string description;

  // Both required. Owned by the engine after Engine::Create; only this
  // device's worker thread calls them.
  std::unique_ptr<models::SegmentationModel> segmentation;
  std::unique_ptr<models::EmbeddingModel> embedding;

  // "fp32" / "tf32". Empty means: ask the model's precision().
  std::string segmentation_precision;
  std::string embedding_precision;

  // Optional. Called from an engine thread (about once a second for metrics,
  // and from Engine::Devices()); must be thread-safe and cheap. Unset = no
  // memory statistics (all zero).
  std::function<DeviceMemoryStats()> memory_stats;

  // True when the two models may run at the same time from two threads
  // (they share no mutable state, e.g. each has its own CUDA stream and
  // library handles). The device then gets two worker threads, one per
  // stage, so segmentation of new windows overlaps embedding of earlier
  // ones. False (one thread alternating the stages) suits backends whose
  // models share one thread pool, like the CPU backend.
  bool concurrent_stages = false;

  // Optional. Seconds the GPU has spent on each model's batches so far
  // (CUDA events around each batch: engine/models/cuda_busy_timer.h),
  // monotonic. Called only on the thread that runs that model, right after
  // its batches, so the model needs no locking for it; exported as
  // diarization_device_gpu_seconds_total. Unset: the device has no such
  // measure (the CPU).
  std::function<double()> segmentation_gpu_seconds;
  std::function<double()> embedding_gpu_seconds;

  // Optional. Page-locked host memory of `floats` floats, released when the
  // last holder lets go. The worker (and the offline networks pass) gather a
  // batch's audio into it (batch_windows.h), and the backend's window upload
  // copies it to the device straight from there
  // (engine/models/cuda_window_upload.h) instead of first copying it into
  // page-locked staging of its own: one host copy of each batch's audio
  // instead of two, which at 64 streams is ~20 MB per embedding batch and
  // ~80 MB per segmentation batch. The worker asks once per stage when it
  // starts, on the starting thread (an error fails the start); the offline
  // networks pass asks on every call, so a backend should keep released
  // buffers for the next request (the CUDA one pools them). Unset (the
  // CPU): ordinary memory.
  std::function<absl::StatusOr<std::shared_ptr<float[]>>(size_t floats)>
      pinned_host_floats;

  // Optional. Run on each of the device's worker threads before its first
  // batch (e.g. cudaSetDevice for the GPU this Device stands for). An error
  // makes Engine::Create fail with that status.
  std::function<absl::Status()> on_worker_start;
  // Optional. Run on each worker thread when it stops.
  std::function<void()> on_worker_stop;

  // Optional. The clustering's centroid linkage on this device
  // (engine/models/cuda_linkage.h): thread-safe, the host linkage's merges
  // bit for bit, calls turned away while it is busy. The engine's default
  // clustering tries each device's in turn, then the host
  // (engine/runtime/linkage_pool.h).
  std::shared_ptr<pipeline::LinkageAccelerator> linkage;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_DEVICE_H_
