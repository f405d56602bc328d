// The CUDA side of backends.cc, linked in one of two versions:
// cuda_devices_cuda.cc (//server:diarization_server_cuda, with the CUDA
// backend) or cuda_devices_none.cc (//server:diarization_server, CPU only,
// which builds and runs on machines without the CUDA toolkit).
#ifndef DIARIZATION_SERVER_CUDA_DEVICES_H_
#define DIARIZATION_SERVER_CUDA_DEVICES_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/models/model_dir.h"
#include "engine/runtime/device.h"

namespace diarization::server {

// Whether this binary has the CUDA backend.
bool CudaBackendLinked();

// Visible GPUs; 0 without the backend, a driver or a GPU.
int CudaDeviceCount();

// One engine Device on GPU `ordinal` (weights resident in its arena).
absl::StatusOr<runtime::Device> MakeCudaDevice(
    const models::ModelDirectory& dir, int ordinal,
    const std::string& embedding_precision, int max_batch);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_CUDA_DEVICES_H_
