// The engine's options (EngineOptions) and their validation: what
// Engine::Create checks before it starts anything.
#ifndef DIARIZATION_ENGINE_RUNTIME_ENGINE_OPTIONS_H_
#define DIARIZATION_ENGINE_RUNTIME_ENGINE_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/pipeline/diarization.h"

namespace diarization::runtime {

// The host stages after the networks; pipeline::Diarize with the engine's
// PLDA by default. Tests may replace it to observe exactly what the engine
// feeds the host pipeline. segmentations: (C × 589 × 3) 0/1;
// embeddings: (C × 3 × 256). Must be thread-safe.
using ClusterFunction =
    std::function<absl::StatusOr<pipeline::DiarizationOutput>(
        std::span<const float> segmentations, std::span<const float> embeddings,
        int num_windows, const pipeline::PipelineConfig& config,
        const pipeline::SpeakerHints& hints)>;

// The CPU backend's batch sizes: runtime::DefaultBatchSizes (devices.h).

struct EngineOptions {
  // Windows per network batch. An embedding batch window carries its 3 local
  // speaker masks (the model runs fbank + trunk once per window). The
  // segmentation default is the CUDA one (docs/benchmarks.md "Segmentation
  // batch inside 2 GiB"): the LSTM recurrence takes about as long for 128
  // windows as for 32, so segmentation falls from 1.98 to 0.85 s per audio
  // hour (H200), and one pipeline's arena stays at 1.72 GiB next to an
  // embedding batch of 32. 192 and 224 would fit too (1.90, 1.99 GiB); they
  // were ruled out while DeviceWorker held segmentation back at two queued
  // embedding batches, which they outlast. It now holds back at one
  // segmentation batch and one embedding batch, and they have not been
  // measured since.
  int segmentation_batch_size = 128;
  int embedding_batch_size = 32;
  // A partial batch starts once its oldest window has waited this long.
  absl::Duration max_batch_wait = absl::Milliseconds(5);
  // Windows of streaming jobs go before all others, in batches of their
  // own, in either stage: a live window then waits for at most the batch
  // in progress (one piece of bulk work) instead of the bulk batches queued
  // before it, and never shares its batch with bulk windows. For devices
  // where a batch costs about the sum of its windows (the CPU: a live
  // window in a batch of 4 took 4 windows' time); on a GPU a batch costs
  // little more than one window and the round-robin rule already serves a
  // stream in the next batch. The server turns it on for the CPU
  // (runtime::DefaultBatchSizes, issue 39). Results are the same: a
  // window's outputs do not depend on its batch-mates.
  bool live_windows_first = false;

  // --- Admission (checked for a new call only; never for an accepted
  // job's Append). Refusals are RESOURCE_EXHAUSTED with RetryAfter. ---
  // Audio seconds accepted and not yet through both networks, over all
  // jobs. A recording is admitted when it fits under the limit; a stream
  // while the backlog is below it (a stream then grows the backlog as its
  // audio arrives, paced by NotifyWhenBacklogAtMost).
  double max_backlog_audio_s = 3600.0;
  // One recording (Reserve with audio_s > 0) may hold at most this share of
  // max_backlog_audio_s; a longer one is INVALID_ARGUMENT (stream it
  // instead). In (0, 1]. The default 1 caps nothing; a server sets its
  // policy (e.g. 0.25, so one small file that decodes to an hour cannot take
  // the whole backlog).
  double max_request_backlog_share = 1.0;
  // Per peer (AdmissionRequest::peer, JobOptions::peer; calls with an empty
  // peer are not counted): calls admitted and not yet completed, and their
  // backlog seconds. 0 = no limit.
  int max_calls_per_peer = 0;
  double max_peer_backlog_audio_s = 0.0;
  // Memory high-water marks; 0 = none. While the bytes held by jobs
  // (Engine::job_memory_bytes) or the process's resident set exceed them,
  // new calls are refused.
  int64_t max_job_memory_bytes = 0;
  int64_t max_process_rss_bytes = 0;
  // How the engine reads the process's resident set, bytes. Unset: from
  // /proc/self/statm. Tests inject one. Must be thread-safe.
  std::function<int64_t()> process_rss_bytes;
  // After a job that held at least this many bytes completes, the engine
  // returns free heap memory to the OS (glibc malloc_trim) on a host thread.
  // 0 = never.
  int64_t trim_after_job_bytes = int64_t{64} << 20;

  // Threads of the host pool (final and partial clustering).
  int host_threads = 2;
  // Threads of the BLAS library (OpenBLAS) per call of the host pipeline,
  // set process-wide at Create. 0 = the library's own setting (every core,
  // or OPENBLAS_NUM_THREADS). With many host threads clustering at once,
  // 1 keeps them off one another's cores (the parallelism is then the host
  // threads'); the results do not depend on it.
  int clustering_blas_threads = 0;
  // Threads that run the jobs' callbacks (kept apart from clustering, so a
  // long clustering never delays another job's resume or result).
  int callback_threads = 2;

  // Optional replacement for pipeline::Diarize (see ClusterFunction).
  ClusterFunction cluster_function;
};

// OK when every option is in its range; else INVALID_ARGUMENT naming the
// option, its range and the value given ("Engine::Create: ..."). `has_plda`:
// Create was given a PLDA model (without one, cluster_function is required).
absl::Status ValidateEngineOptions(const EngineOptions& options, bool has_plda);

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_OPTIONS_H_
