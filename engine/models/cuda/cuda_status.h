// absl::Status from the error codes of the CUDA runtime, cuBLAS and cuDNN:
// an allocation failure becomes ResourceExhausted, any other error Internal,
// with `what` (the call or the data) and the library's own message.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_STATUS_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "absl/status/status.h"

namespace diarization::models::cuda {

absl::Status CudaStatus(cudaError_t err, const std::string& what);
absl::Status CublasStatus(cublasStatus_t st, const std::string& what);
absl::Status CudnnStatus(cudnnStatus_t st, const std::string& what);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_STATUS_H_
