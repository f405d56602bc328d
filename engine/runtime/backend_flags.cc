#include "engine/runtime/backend_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/runtime/engine.h"

ABSL_FLAG(std::string, device, "auto",
          "cpu, cuda (every GPU), cuda:0,1 (these GPUs), or auto (cuda when a "
          "GPU and the CUDA backend are present, else cpu)");
ABSL_FLAG(int, threads, 0,
          "CPU backend threads for the networks (0: all cores)");
ABSL_FLAG(int, pipelines_per_device, 1,
          "pre-loaded pipelines per GPU, each with its own models, streams "
          "and arena (1..8); devices are then named cuda:N/p0, cuda:N/p1, ...");
ABSL_FLAG(int, segmentation_batch_size, 0,
          "Windows per segmentation batch, and what each CUDA segmentation "
          "network's buffers are sized for; 0: the device's default, 128 on "
          "CUDA (sized to keep a pipeline's arena within 2 GiB), 4 on the "
          "CPU (one run of the CPU networks)");
ABSL_FLAG(int, embedding_batch_size, 0,
          "Windows per embedding batch (and the CUDA embedding network's "
          "buffers); 0: the device's default, 32 on CUDA, 4 on the CPU (one "
          "run of the CPU networks)");
ABSL_FLAG(std::string, cuda_embedding_precision, "tf32",
          "CUDA embedding network precision: tf32 (tensor cores; the trunk "
          "on cuDNN graph engines chosen when the model loads, ADR 0079) or "
          "fp32 (FMA-only kernels, the legacy cuDNN call)");
ABSL_FLAG(std::string, cuda_conv_engine_cache, "",
          "With tf32: a file that keeps the graph engine chosen per trunk "
          "layer shape, so a restart builds those instead of timing the "
          "candidates (written after each choice; entries of another GPU or "
          "cuDNN version are ignored). With it the first load times more "
          "candidates (about 30 s more on an H200) and picks faster engines, "
          "and later loads take about 5 s (ADR 0087, 0092). Empty: none (each "
          "load times the candidates for up to 1 s per layer shape)");

namespace diarization::runtime {

absl::StatusOr<BackendFlags> BackendFlagsFromCommandLine() {
  BackendFlags f;
  DevicesOptions& d = f.devices;
  d.device = absl::GetFlag(FLAGS_device);
  d.cpu.threads = absl::GetFlag(FLAGS_threads);
  d.pipelines_per_device = absl::GetFlag(FLAGS_pipelines_per_device);
  models::CudaModelOptions& seg = d.cuda.segmentation;
  models::CudaModelOptions& emb = d.cuda.embedding;
  emb.precision = absl::GetFlag(FLAGS_cuda_embedding_precision);
  if (emb.precision != "fp32" && emb.precision != "tf32") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cuda_embedding_precision=", emb.precision, ": use tf32 or fp32"));
  }
  emb.conv_engine_cache = absl::GetFlag(FLAGS_cuda_conv_engine_cache);

  // 0: the device kind's default (devices.h, DefaultBatchSizes, says why
  // the CPU's are small and why the CPU takes live windows first).
  ASSIGN_OR_RETURN(const DeviceSpec spec, ParseDeviceSpec(d.device));
  const BatchSizes defaults = DefaultBatchSizes(spec);
  f.live_windows_first = defaults.live_windows_first;
  f.segmentation_batch_size = absl::GetFlag(FLAGS_segmentation_batch_size);
  if (f.segmentation_batch_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segmentation_batch_size must be >= 0, got ",
                     f.segmentation_batch_size));
  }
  if (f.segmentation_batch_size == 0) {
    f.segmentation_batch_size = defaults.segmentation;
  }
  f.embedding_batch_size = absl::GetFlag(FLAGS_embedding_batch_size);
  if (f.embedding_batch_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--embedding_batch_size must be >= 0, got ", f.embedding_batch_size));
  }
  if (f.embedding_batch_size == 0) f.embedding_batch_size = defaults.embedding;
  seg.max_batch = f.segmentation_batch_size;
  emb.max_batch = f.embedding_batch_size;
  return f;
}

std::string DescribeBackendFlags(const BackendFlags& f) {
  const DevicesOptions& d = f.devices;
  const models::CudaModelOptions& emb = d.cuda.embedding;
  return absl::StrCat(
      "device=", d.device, " threads=", d.cpu.threads,
      " pipelines_per_device=", d.pipelines_per_device,
      " segmentation_batch_size=", f.segmentation_batch_size,
      " embedding_batch_size=", f.embedding_batch_size,
      " cuda_embedding_precision=", emb.precision, " cuda_conv_engine_cache=",
      emb.conv_engine_cache.empty() ? "(none)" : emb.conv_engine_cache);
}

}  // namespace diarization::runtime
