#include "absl/strings/str_cat.h"
#include "bench/service_overhead/bench_devices.h"
#include "engine/common/status_macros.h"
#include "engine/models/cpu_backend.h"

namespace diarization::bench {

absl::StatusOr<runtime::Device> MakeCpuDevice(const models::ModelDirectory& dir,
                                              int cpu_threads) {
  ASSIGN_OR_RETURN(models::CpuBackend cpu,
                   models::CreateCpuBackend(dir, {.threads = cpu_threads}));
  runtime::Device d;
  d.name = "cpu";
  d.description = cpu.description;
  d.segmentation = std::move(cpu.segmentation);
  d.embedding = std::move(cpu.embedding);
  d.segmentation_precision = cpu.precision;
  d.embedding_precision = cpu.precision;
  return d;
}

}  // namespace diarization::bench
