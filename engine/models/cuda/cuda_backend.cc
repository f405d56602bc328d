#include "engine/models/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/device_arena_cuda.h"

namespace diarization::models {

CudaMemorySnapshot CudaBackend::Memory() const {
  CudaMemorySnapshot s;
  if (arena) s.arena = arena->Stats();
  size_t free_bytes = 0, total = 0;
  int previous = 0;
  if (arena && cudaGetDevice(&previous) == cudaSuccess &&
      cudaSetDevice(arena->device()) == cudaSuccess &&
      cudaMemGetInfo(&free_bytes, &total) == cudaSuccess) {
    s.device_free_bytes = free_bytes;
    s.device_total_bytes = total;
    cudaSetDevice(previous);
  }
  return s;
}

absl::StatusOr<CudaBackend> CreateCudaBackendFromFiles(
    const SafetensorsFile& segmentation, const SafetensorsFile& embedding,
    int device_ordinal, const CudaBackendOptions& options,
    const CudaHarnessOptions& harness) {
  int count = 0;
  RETURN_IF_ERROR(
      cuda::CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (device_ordinal < 0 || device_ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", device_ordinal, " does not exist (", count,
                     " visible)"));
  }
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(
      cuda::CudaStatus(cudaGetDeviceProperties(&prop, device_ordinal),
                       "cudaGetDeviceProperties"));
  CudaBackend backend;
  backend.device_name = absl::StrCat("cuda:", device_ordinal);
  backend.description =
      absl::StrFormat("%s (sm_%d%d, %.1f GiB)", prop.name, prop.major,
                      prop.minor, prop.totalGlobalMem / 1073741824.0);
  DeviceArenaOptions arena_options = options.arena;
  arena_options.device = device_ordinal;
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceArena> arena,
                   CreateCudaDeviceArena(arena_options));
  backend.arena = std::move(arena);
  ASSIGN_OR_RETURN(backend.segmentation, CudaSegmentationModel::Create(
                                             segmentation, backend.arena,
                                             options.segmentation, harness));
  ASSIGN_OR_RETURN(backend.embedding,
                   CudaEmbeddingModel::Create(embedding, backend.arena,
                                              options.embedding, harness));
  return backend;
}

absl::StatusOr<CudaBackend> CreateCudaBackend(
    const ModelDirectory& models, int device_ordinal,
    const CudaBackendOptions& options, const CudaHarnessOptions& harness) {
  return CreateCudaBackendFromFiles(models.segmentation(), models.embedding(),
                                    device_ordinal, options, harness);
}

}  // namespace diarization::models
