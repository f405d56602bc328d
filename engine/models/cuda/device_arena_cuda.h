// The real VmmDriver: the CUDA driver's virtual memory management API
// (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess, ...).
//
// The driver entry points are looked up at run time through the CUDA runtime
// (cudaGetDriverEntryPointByVersion), so nothing links libcuda directly and
// binaries load on machines without a GPU driver (CI builds them there).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_CUDA_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_CUDA_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/models/cuda/device_arena.h"

namespace diarization::models {

// Fails with FailedPrecondition when no driver is present or the device does
// not support virtual memory management. Makes `device` current on the
// calling thread (its primary context).
absl::StatusOr<std::unique_ptr<VmmDriver>> CreateCudaVmmDriver(int device);

// CreateCudaVmmDriver + DeviceArena::Create.
absl::StatusOr<std::unique_ptr<DeviceArena>> CreateCudaDeviceArena(
    const DeviceArenaOptions& options);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_CUDA_H_
