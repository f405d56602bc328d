// The build with the CUDA backend (engine/models/cuda_backend.h).
#include "engine/runtime/devices_cuda.h"

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_backend.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/linkage/cuda_linkage.h"
#include "engine/runtime/devices.h"

namespace diarization::runtime {

bool CudaBackendLinked() { return true; }

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device / no driver" error
    return 0;
  }
  return count;
}

absl::StatusOr<CudaDeviceParts> MakeCudaDeviceParts(
    const models::ModelDirectory& dir, int ordinal,
    const CudaDeviceOptions& device_options,
    const models::CudaBackendOptions& options,
    const models::SafetensorsFile* segmentation_weights,
    const models::CudaHarnessOptions& harness) {
  const int count = CudaDeviceCount();
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device asks for cuda:", ordinal, " but ", count,
                     " GPU(s) are visible (CUDA_VISIBLE_DEVICES, driver?)"));
  }
  // Each pipeline has its own arena (CreateCudaBackend makes one), so its
  // own budget.
  ASSIGN_OR_RETURN(
      models::CudaBackend cuda,
      segmentation_weights != nullptr
          ? models::CreateCudaBackendFromFiles(*segmentation_weights,
                                               dir.embedding(), ordinal,
                                               options, harness)
          : models::CreateCudaBackend(dir, ordinal, options, harness));
  CudaDeviceParts parts;
  Device& d = parts.device;
  const bool several = device_options.pipelines > 1;
  d.name = several
               ? absl::StrCat(cuda.device_name, "/p", device_options.pipeline)
               : cuda.device_name;
  d.description = absl::StrCat(
      cuda.description,
      several ? absl::StrCat("; pipeline ", device_options.pipeline + 1, " of ",
                             device_options.pipelines)
              : "",
      "; ", cuda.segmentation->lstm_selection());
  d.segmentation_precision = cuda.segmentation->precision();
  d.embedding_precision = cuda.embedding->precision();
  parts.segmentation = cuda.segmentation.get();
  parts.embedding = cuda.embedding.get();
  // The models live as long as the Device that holds these hooks.
  d.segmentation_gpu_seconds = [m = parts.segmentation] {
    return m->device_seconds();
  };
  d.embedding_gpu_seconds = [m = parts.embedding] {
    return m->device_seconds();
  };
  // The batches' audio in page-locked memory, which the window upload
  // copies to the GPU without staging it again (Device::pinned_host_floats).
  // Pooled: the offline networks pass asks for its buffers on every call.
  d.pinned_host_floats =
      [ordinal, name = d.name,
       pool = std::make_shared<models::cuda::SharedPinnedPool>()](
          size_t floats) -> absl::StatusOr<std::shared_ptr<float[]>> {
    // On this GPU's context, leaving the calling thread's device as it was.
    int previous = 0;
    RETURN_IF_ERROR(
        models::cuda::CudaStatus(cudaGetDevice(&previous), "cudaGetDevice"));
    RETURN_IF_ERROR(
        models::cuda::CudaStatus(cudaSetDevice(ordinal), "cudaSetDevice"));
    absl::StatusOr<std::shared_ptr<float[]>> buffer =
        pool->Get(floats, absl::StrCat(name, " batch audio"));
    cudaSetDevice(previous);
    return buffer;
  };
  d.segmentation = std::move(cuda.segmentation);
  d.embedding = std::move(cuda.embedding);
  // The arena outlives the models: the snapshot closure keeps the rest of
  // the backend (arena, names) alive.
  auto backend = std::make_shared<const models::CudaBackend>(std::move(cuda));
  parts.backend = backend;
  d.memory_stats = [backend] {
    const models::CudaMemorySnapshot m = backend->Memory();
    DeviceMemoryStats s;
    s.arena_reserved_bytes = m.arena.reserved_bytes;
    s.arena_mapped_bytes = m.arena.mapped_bytes;
    s.arena_used_bytes = m.arena.used_bytes;
    s.arena_peak_bytes = m.arena.peak_used_bytes;
    s.device_free_bytes = m.device_free_bytes;
    s.device_total_bytes = m.device_total_bytes;
    return s;
  };
  d.on_worker_start = [ordinal]() -> absl::Status {
    if (cudaSetDevice(ordinal) != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("cudaSetDevice(", ordinal, ") failed on the worker"));
    }
    return absl::OkStatus();
  };
  if (device_options.gpu_linkage) {
    ASSIGN_OR_RETURN(std::unique_ptr<models::cuda::CudaLinkage> linkage,
                     models::cuda::CudaLinkage::Create(backend->arena.get()));
    // The linkage's buffers live in the backend's arena: it keeps the
    // backend alive.
    d.linkage = std::shared_ptr<pipeline::LinkageAccelerator>(
        linkage.release(),
        [backend](pipeline::LinkageAccelerator* l) { delete l; });
  }
  // Each model has its own stream and handles: segmentation of new windows
  // overlaps embedding of earlier ones (H200: 384x -> 506x RTFx on one
  // 10-min file, identical RTTM; docs/benchmarks.md "Engine").
  d.concurrent_stages = true;
  return parts;
}

absl::StatusOr<Device> MakeCudaDevice(
    const models::ModelDirectory& dir, int ordinal,
    const CudaDeviceOptions& device_options,
    const models::CudaBackendOptions& backend_options) {
  ASSIGN_OR_RETURN(
      CudaDeviceParts parts,
      MakeCudaDeviceParts(dir, ordinal, device_options, backend_options));
  return std::move(parts.device);
}

}  // namespace diarization::runtime
