// The CUDA backend for one GPU: the device arena, and both networks on it,
// loaded from a model directory (model_dir.h). No ONNX Runtime: cuDNN,
// cuBLAS and the project's kernels (kernels/).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BACKEND_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_options.h"
#include "engine/models/cuda/device_arena.h"
#include "engine/models/cuda/embedding/cuda_embedding_model.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_model.h"
#include "engine/models/format/model_dir.h"

namespace diarization::models {

// Memory of one device, for metrics and the benchmark.
struct CudaMemorySnapshot {
  DeviceArenaStats arena;
  uint64_t device_free_bytes = 0;  // cudaMemGetInfo
  uint64_t device_total_bytes = 0;
};

struct CudaBackend {
  std::string device_name;  // "cuda:0"
  std::string description;  // e.g. "NVIDIA H200 (sm_90, 139.8 GiB)"
  // Shared with the models, which keep it alive.
  std::shared_ptr<DeviceArena> arena;
  std::unique_ptr<CudaSegmentationModel> segmentation;
  std::unique_ptr<CudaEmbeddingModel> embedding;

  CudaMemorySnapshot Memory() const;
};

// `harness`: the kernels' own tests and harnesses only (cuda_options.h).
absl::StatusOr<CudaBackend> CreateCudaBackend(
    const ModelDirectory& models, int device_ordinal,
    const CudaBackendOptions& options, const CudaHarnessOptions& harness = {});

// Same, from the two safetensors files directly (tests, tools).
absl::StatusOr<CudaBackend> CreateCudaBackendFromFiles(
    const SafetensorsFile& segmentation, const SafetensorsFile& embedding,
    int device_ordinal, const CudaBackendOptions& options,
    const CudaHarnessOptions& harness = {});

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BACKEND_H_
