// The backend flags of every binary that runs the networks: the server,
// tools/diarize, bench/gpu/rtfx_main and bench/service_overhead/engine_direct
// link this one module, so a switch has one name (its flag, which names its
// field in DevicesOptions / models::CudaBackendOptions) and a benchmark runs
// exactly what the server runs with the same flags (ADR 0092).
//
//   --device                    auto | cpu | cuda | cuda:N[,M...]
//   --threads                   CPU backend threads (0: all cores)
//   --pipelines_per_device      pipelines per GPU (1..8)
//   --segmentation_batch_size   engine batch, sizes the CUDA buffers too
//   --embedding_batch_size      the same for the embeddings
//   --cuda_embedding_precision  fp32 | tf32
//   --cuda_conv_engine_cache    file of the graph engines chosen per layer
//
// Everything else of the CUDA backend is fixed behaviour or the default of
// models::CudaModelOptions; the kernels' own knobs are
// models::CudaHarnessOptions, which no flag reaches.
//
// Linked in two versions like device assembly (devices.h):
// //engine/runtime:backend_flags_cpu and //engine/runtime:backend_flags_cuda.
#ifndef DIARIZATION_ENGINE_RUNTIME_BACKEND_FLAGS_H_
#define DIARIZATION_ENGINE_RUNTIME_BACKEND_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/runtime/devices.h"

namespace diarization::runtime {

struct BackendFlags {
  // What LoadDevices builds the devices from; the CUDA networks' max_batch
  // are the batch sizes below.
  DevicesOptions devices;
  // The engine's batch sizes (EngineOptions::segmentation_batch_size and
  // embedding_batch_size), resolved: 0 in a flag is the device kind's
  // default (DefaultBatchSizes, devices.h).
  int segmentation_batch_size = 0;
  int embedding_batch_size = 0;
  // EngineOptions::live_windows_first: the device kind's (on for the CPU).
  bool live_windows_first = false;
};

// The flags as parsed (call after absl::ParseCommandLine), checked:
// InvalidArgument naming the flag for a value out of range.
absl::StatusOr<BackendFlags> BackendFlagsFromCommandLine();

// One line for logs and benchmark results: the device, the batch sizes and
// every CUDA backend switch with its value.
std::string DescribeBackendFlags(const BackendFlags& flags);

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_BACKEND_FLAGS_H_
