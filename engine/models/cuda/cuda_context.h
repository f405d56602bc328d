// The execution context of one CUDA network on one device: its stream, its
// cuBLAS, cuBLASLt and cuDNN handles (math modes set from the precision),
// the workspaces, and the arena all its device memory comes from.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_CONTEXT_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_CONTEXT_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_precision.h"
#include "engine/models/cuda/device_arena.h"

namespace diarization::models::cuda {

// Runs `allocate` (library calls that take device memory the arena cannot
// provide: handles, FFT plans) with the device synchronised before and
// after, and books how far the device's free memory fell as `owner`'s
// external bytes (DeviceArena::RecordExternal), so the ledger stays whole.
// A failure of `allocate` is returned and nothing is booked.
absl::Status BookLibraryDeviceMemory(
    DeviceArena* arena, const std::string& owner,
    absl::FunctionRef<absl::Status()> allocate);

// Stream + library handles + workspace for one model on one device.
class CudaContext {
 public:
  // `owner` prefixes the ledger entries ("embedding/..."). The handles'
  // internal device memory (which cannot come from the arena) is measured
  // with cudaMemGetInfo and booked as external.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(
      DeviceArena* arena, const std::string& owner, Precision precision,
      size_t workspace_bytes, bool timed_conv_algorithms = false);
  ~CudaContext();

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  // For GEMMs with a fused epilogue (cuda_linear.h). It has no math mode:
  // its callers pick the compute type from precision(), as cublasSgemm
  // does from the cuBLAS handle's mode.
  cublasLtHandle_t cublas_lt() const { return cublas_lt_; }
  // cuBLAS's workspace, which cuBLASLt calls on this stream share (they are
  // ordered by the stream, so never in use twice at once).
  void* cublas_workspace() const { return cublas_workspace_.data(); }
  size_t cublas_workspace_bytes() const { return cublas_workspace_.bytes(); }
  cudnnHandle_t cudnn() const { return cudnn_; }
  void* workspace() const { return workspace_.data(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }
  DeviceArena* arena() const { return arena_; }
  Precision precision() const { return precision_; }
  bool timed_conv_algorithms() const { return timed_conv_algorithms_; }
  const std::string& owner() const { return owner_; }

 private:
  CudaContext() = default;
  DeviceArena* arena_ = nullptr;
  std::string owner_;
  Precision precision_ = Precision::kFp32;
  bool timed_conv_algorithms_ = false;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer cublas_workspace_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_CONTEXT_H_
