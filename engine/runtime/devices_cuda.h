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

struct CudaDeviceOptions {
  std::string embedding_precision = "tf32";
  int max_batch = 32;
  // This pipeline's index among the GPU's `pipelines` (BackendOptions::
  // pipelines_per_device): the Device is "cuda:N" for one pipeline, else
  // "cuda:N/p<pipeline>".
  int pipeline = 0;
  int pipelines = 1;
  std::string lstm_kernel = "qualified";
  bool cooperative_token = true;
};

// One engine Device (one pipeline) on GPU `ordinal`: its own models, streams
// and arena, weights resident. Its description says which LSTM kernel runs
// and why (GetInfo shows it).
absl::StatusOr<runtime::Device> MakeCudaDevice(
    const models::ModelDirectory& dir, int ordinal,
    const CudaDeviceOptions& options);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_CUDA_DEVICES_H_
