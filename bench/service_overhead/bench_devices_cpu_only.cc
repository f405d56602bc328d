// MakeDevice for the CPU-only binary.
#include "absl/strings/str_cat.h"
#include "bench/service_overhead/bench_devices.h"

namespace diarization::bench {

absl::StatusOr<runtime::Device> MakeDevice(const std::string& spec,
                                           const models::ModelDirectory& dir,
                                           int cpu_threads) {
  if (spec == "cpu") return MakeCpuDevice(dir, cpu_threads);
  return absl::InvalidArgumentError(
      absl::StrCat("--device ", spec,
                   ": this binary has the CPU backend only; use "
                   "engine_direct_cuda for cuda:N"));
}

}  // namespace diarization::bench
