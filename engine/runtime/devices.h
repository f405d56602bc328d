// Device assembly: the engine Devices (device.h) of a process, built from a
// model directory (verified against its manifest) and the model backends,
// plus the PLDA. Every caller that runs the networks builds its devices
// here: the server, tools/diarize, bench/gpu/rtfx_main and
// bench/service_overhead/engine_direct, so they all run what serves.
//
// Linked in one of two versions
// (docs/adr/0067-device-assembly-in-the-engine.md):
// //engine/runtime:devices_cpu (devices_none.cc: no CUDA backend; builds and
// runs on machines without the CUDA toolkit) or //engine/runtime:devices_cuda
// (devices_cuda.cc, with the CUDA backend; devices_cuda.h adds what only
// that version has). The same functions are declared for both; without the
// CUDA backend the CUDA ones fail with FAILED_PRECONDITION.
//
// Errors name the flags of the binaries that pass these options through
// (--device, --pipelines_per_device: engine/runtime/backend_flags.h), since
// that is what a user changes.
#ifndef DIARIZATION_ENGINE_RUNTIME_DEVICES_H_
#define DIARIZATION_ENGINE_RUNTIME_DEVICES_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/cpu/cpu_backend.h"
#include "engine/models/cuda/cuda_options.h"
#include "engine/models/format/model_dir.h"
#include "engine/pipeline/plda.h"
#include "engine/runtime/device.h"
#include "engine/runtime/loaded_model.h"

namespace diarization::runtime {

struct DevicesOptions {
  // "auto", "cpu", "cuda" (every GPU) or "cuda:0,1" (these GPUs).
  std::string device = "auto";
  // Pre-loaded pipelines per GPU (--pipelines_per_device, 1..8): each has
  // its own models, CUDA streams and device arena (its own budget), and the
  // engine runs each as a Device of its own, named "cuda:N" when there is
  // one per GPU and "cuda:N/p0", "cuda:N/p1", ... when there are more. The
  // pipelines of a GPU share its cooperative launch token
  // (kernels/cooperative_token.h). Ignored for the CPU device.
  int pipelines_per_device = 1;
  // The CPU device's networks.
  models::CpuBackendOptions cpu;
  // Each GPU pipeline's backend, as given. Each network's max_batch is the
  // largest batch its buffers are sized for: the engine's segmentation and
  // embedding batch sizes (larger calls are split into launches of this
  // size), so a larger segmentation batch does not grow the embedding's
  // buffers. Defaults: EngineOptions' (engine.h; devices_test checks them).
  models::CudaBackendOptions cuda;
  // The clustering's centroid linkage on each GPU pipeline
  // (engine/models/cuda_linkage.h; 128 MiB of the pipeline's arena; the
  // host's merges bit for bit). Not a flag: off only in tests.
  bool gpu_linkage = true;
};

// A parsed --device.
struct DeviceSpec {
  bool cpu = false;
  // Empty with all_cuda: every visible GPU.
  std::vector<int> cuda_ordinals;
  bool all_cuda = false;
};

// "cpu", "cuda", "cuda:N[,M...]"; "auto" resolves to cuda when the CUDA
// backend is linked and a GPU is visible, else cpu.
absl::StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& device);

// Windows per segmentation and per embedding batch.
struct BatchSizes {
  int segmentation = 0;
  int embedding = 0;
  // EngineOptions::live_windows_first.
  bool live_windows_first = false;
};

// The batch sizes a server uses on the devices of `spec` unless told
// otherwise. CUDA: EngineOptions' (128 and 32, engine.h says why), the
// same as DevicesOptions'. CPU: as
// many windows as the CPU networks run at once
// (CpuModelOptions::max_windows_per_run, 4) in both stages. A device works
// one batch at a time and its two stages take turns, so a live stream's
// window waits for the batch in progress: with one network run per batch
// that is one piece of bulk work (0.2-1 s on a CPU), where batches of 32
// made it wait out eight runs of a bulk upload (9-16 s beside one upload,
// issue 39). Larger CPU batches bought nothing: a batch of 32 ran as eight
// runs of 4 anyway (CpuRunChunks), and a window's outputs do not depend on
// its batch-mates (ADR 0083), so results are the same bit for bit. For the
// same reason the CPU takes streaming windows first, in batches of their
// own (EngineOptions::live_windows_first): a live window then waits behind
// at most the one batch in progress.
BatchSizes DefaultBatchSizes(const DeviceSpec& spec);

struct LoadedDevices {
  std::vector<Device> devices;
  std::shared_ptr<const pipeline::PldaModel> plda;
  // What the directory holds (names, sources, file hashes), for GetInfo:
  // segmentation, embedding and PLDA, in that order.
  std::vector<LoadedModel> models;
  // Any model carries random weights (results are not diarization).
  bool random_weights = false;
};

// Opens the model directory, loads the PLDA and builds the devices that
// `options.device` names. The device spec and the pipeline count are checked
// before the directory is opened.
absl::StatusOr<LoadedDevices> LoadDevices(const std::string& dir,
                                          const DevicesOptions& options);

// The CPU device ("cpu"): both CPU networks on `options.threads` OpenMP
// threads (0 = all cores).
absl::StatusOr<Device> MakeCpuDevice(const models::ModelDirectory& dir,
                                     const models::CpuBackendOptions& options);

// Whether this binary has the CUDA backend (devices_cuda).
bool CudaBackendLinked();

// Visible GPUs; 0 without the backend, a driver or a GPU.
int CudaDeviceCount();

// What names a CUDA Device and what it adds to the backend.
struct CudaDeviceOptions {
  // This pipeline's index among the GPU's `pipelines` (DevicesOptions::
  // pipelines_per_device): the Device is "cuda:N" for one pipeline, else
  // "cuda:N/p<pipeline>".
  int pipeline = 0;
  int pipelines = 1;
  // Device::linkage: the clustering's centroid linkage on this GPU
  // (engine/models/cuda_linkage.h; 128 MiB of the pipeline's arena).
  bool gpu_linkage = true;
};

// One engine Device (one pipeline) on GPU `ordinal`: its own models, streams
// and arena, weights resident. Its description says which LSTM kernel runs
// and why (GetInfo shows it).
absl::StatusOr<Device> MakeCudaDevice(
    const models::ModelDirectory& dir, int ordinal,
    const CudaDeviceOptions& options,
    const models::CudaBackendOptions& backend_options);

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_DEVICES_H_
