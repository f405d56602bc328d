// Builds the engine's Device for a --device spec ("cpu", "cuda:N") from a
// model directory, the way a server process would. Two implementations are
// linked by choice: bench_devices_cpu.cc (CPU only) and
// bench_devices_cuda.cc (CPU and CUDA), so the CPU binary needs no CUDA.
#ifndef DIARIZATION_BENCH_SERVICE_OVERHEAD_BENCH_DEVICES_H_
#define DIARIZATION_BENCH_SERVICE_OVERHEAD_BENCH_DEVICES_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/models/model_dir.h"
#include "engine/runtime/device.h"

namespace diarization::bench {

// cpu_threads: OpenMP threads of the CPU networks (0 = all cores).
absl::StatusOr<runtime::Device> MakeDevice(const std::string& spec,
                                           const models::ModelDirectory& dir,
                                           int cpu_threads);

// The CPU device (shared by both implementations).
absl::StatusOr<runtime::Device> MakeCpuDevice(const models::ModelDirectory& dir,
                                              int cpu_threads);

}  // namespace diarization::bench

#endif  // DIARIZATION_BENCH_SERVICE_OVERHEAD_BENCH_DEVICES_H_
