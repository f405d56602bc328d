#include "engine/models/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace diarization::models::cuda {

absl::Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

absl::Status CublasStatus(cublasStatus_t st, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cublasGetStatusString(st));
  if (st == CUBLAS_STATUS_ALLOC_FAILED)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

absl::Status CudnnStatus(cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cudnnGetErrorString(st));
  if (st == CUDNN_STATUS_ALLOC_FAILED)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

}  // namespace diarization::models::cuda
