// What only the CUDA version of device assembly (//engine/runtime:
// devices_cuda) has: a CUDA Device with views of the CUDA backend behind it,
// for benchmarks that read its CUDA-only counters (bench/gpu/rtfx_main)
// while running the Device exactly as the engine gets it from
// MakeCudaDevice (devices.h).
#ifndef DIARIZATION_ENGINE_RUNTIME_DEVICES_CUDA_H_
#define DIARIZATION_ENGINE_RUNTIME_DEVICES_CUDA_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_backend.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/safetensors.h"
#include "engine/runtime/device.h"
#include "engine/runtime/devices.h"

namespace diarization::runtime {

struct CudaDeviceParts {
  Device device;
  // The device's two models as their CUDA classes (device_seconds, fbank):
  // valid while device.segmentation and device.embedding live.
  models::CudaSegmentationModel* segmentation = nullptr;
  models::CudaEmbeddingModel* embedding = nullptr;
  // The rest of the backend (arena, names; its models are in `device`),
  // shared with device.memory_stats.
  std::shared_ptr<const models::CudaBackend> backend;
};

// MakeCudaDevice, with the CUDA views of the backend kept.
// `segmentation_weights`, when not null, replaces the
// directory's segmentation network (benchmarks: real segmentation weights
// with a random embedding network). `harness`: the kernels' own harnesses
// only (models::CudaHarnessOptions).
absl::StatusOr<CudaDeviceParts> MakeCudaDeviceParts(
    const models::ModelDirectory& dir, int ordinal,
    const CudaDeviceOptions& device_options,
    const models::CudaBackendOptions& backend_options,
    const models::SafetensorsFile* segmentation_weights = nullptr,
    const models::CudaHarnessOptions& harness = {});

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_DEVICES_CUDA_H_
