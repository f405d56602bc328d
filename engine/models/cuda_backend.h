// The CUDA backend for one GPU: the device arena, and both networks on it,
// loaded from a model directory (model_dir.h). No ONNX Runtime: cuDNN,
// cuBLAS and the project's kernels (kernels/).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_BACKEND_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/models/cuda_embedding_model.h"
#include "engine/models/cuda_options.h"
#include "engine/models/cuda_segmentation_model.h"
#include "engine/models/device_arena.h"
#include "engine/models/model_dir.h"

namespace diarization::models {

struct CudaBackendOptions {
  // The arena of the device (its `device` field is overwritten by the
  // ordinal passed to CreateCudaBackend).
  DeviceArenaOptions arena;
  // Segmentation is FP32 only; embedding "tf32" (default) or "fp32".
  // The segmentation's convolutions after the SincNet filter bank (80→60
  // and 60→60, kernel 5) need far less cuDNN workspace than the ResNet's.
  CudaModelOptions segmentation = {.workspace_bytes = size_t{64} << 20};
  // TF32 by default (docs/adr/0062-tf32-embedding-default.md): embeddings
  // within 5.2e-4 relative of FP32, and the same final RTTM on every fixture.
  CudaModelOptions embedding = {.precision = "tf32"};
};

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

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_BACKEND_H_
