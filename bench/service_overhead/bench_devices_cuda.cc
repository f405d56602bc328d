// MakeDevice for the binary with the CUDA backend.
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/service_overhead/bench_devices.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda_backend.h"

namespace diarization::bench {

absl::StatusOr<runtime::Device> MakeDevice(const std::string& spec,
                                           const models::ModelDirectory& dir,
                                           int cpu_threads) {
  if (spec == "cpu") return MakeCpuDevice(dir, cpu_threads);
  int ordinal = -1;
  if (!absl::StartsWith(spec, "cuda:") ||
      !absl::SimpleAtoi(spec.substr(5), &ordinal) || ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device ", spec, ": expected cpu or cuda:N"));
  }
  ASSIGN_OR_RETURN(models::CudaBackend cuda,
                   models::CreateCudaBackend(dir, ordinal, {}));
  runtime::Device d;
  d.name = cuda.device_name;
  d.description = cuda.description;
  d.segmentation_precision = cuda.segmentation->precision();
  d.embedding_precision = cuda.embedding->precision();
  d.segmentation = std::move(cuda.segmentation);
  d.embedding = std::move(cuda.embedding);
  d.concurrent_stages = true;  // own stream and handles per model
  auto backend = std::make_shared<models::CudaBackend>(std::move(cuda));
  d.memory_stats = [backend] {
    const models::CudaMemorySnapshot m = backend->Memory();
    runtime::DeviceMemoryStats s;
    s.arena_reserved_bytes = m.arena.reserved_bytes;
    s.arena_mapped_bytes = m.arena.mapped_bytes;
    s.arena_used_bytes = m.arena.used_bytes;
    s.arena_peak_bytes = m.arena.peak_used_bytes;
    s.device_free_bytes = m.device_free_bytes;
    s.device_total_bytes = m.device_total_bytes;
    return s;
  };
  return d;
}

}  // namespace diarization::bench
