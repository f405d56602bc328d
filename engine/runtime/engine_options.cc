#include "engine/runtime/engine_options.h"

#include "absl/strings/str_cat.h"

namespace diarization::runtime {

absl::Status ValidateEngineOptions(const EngineOptions& options,
                                   bool has_plda) {
  if (options.segmentation_batch_size < 1 || options.embedding_batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: batch sizes must be >= 1, got segmentation ",
        options.segmentation_batch_size, ", embedding ",
        options.embedding_batch_size));
  }
  if (options.max_batch_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "Engine::Create: max_batch_wait must be >= 0");
  }
  if (!(options.max_backlog_audio_s > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Engine::Create: max_backlog_audio_s must be > 0, got ",
                     options.max_backlog_audio_s));
  }
  if (!(options.max_request_backlog_share > 0.0 &&
        options.max_request_backlog_share <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: max_request_backlog_share must be in (0, 1], got ",
        options.max_request_backlog_share));
  }
  if (options.max_calls_per_peer < 0 ||
      !(options.max_peer_backlog_audio_s >= 0.0) ||
      options.max_job_memory_bytes < 0 || options.max_process_rss_bytes < 0 ||
      options.trim_after_job_bytes < 0) {
    return absl::InvalidArgumentError(
        "Engine::Create: max_calls_per_peer, max_peer_backlog_audio_s, "
        "max_job_memory_bytes, max_process_rss_bytes and trim_after_job_bytes "
        "must be >= 0 (0 = none)");
  }
  if (options.clustering_blas_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: clustering_blas_threads must be >= 0 (0 = the "
        "library's own setting), got ",
        options.clustering_blas_threads));
  }
  if (options.host_threads < 1 || options.callback_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Engine::Create: host_threads and callback_threads must be >= 1, got ",
        options.host_threads, " and ", options.callback_threads));
  }
  if (!has_plda && !options.cluster_function) {
    return absl::InvalidArgumentError(
        "Engine::Create: a PLDA model is required (or a cluster_function)");
  }
  return absl::OkStatus();
}

}  // namespace diarization::runtime
