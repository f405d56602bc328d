#include "engine/models/cuda/cuda_context.h"

#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {

absl::Status BookLibraryDeviceMemory(
    DeviceArena* arena, const std::string& owner,
    absl::FunctionRef<absl::Status()> allocate) {
  size_t free_before = 0, free_after = 0, total = 0;
  RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo"));
  RETURN_IF_ERROR(allocate());
  RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo"));
  arena->RecordExternal(
      owner, free_before > free_after ? free_before - free_after : 0);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(
    DeviceArena* arena, const std::string& owner, Precision precision,
    size_t workspace_bytes, bool timed_conv_algorithms) {
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->arena_ = arena;
  ctx->owner_ = owner;
  ctx->precision_ = precision;
  ctx->timed_conv_algorithms_ = timed_conv_algorithms;
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(arena->device()), "cudaSetDevice"));
  // The default priority (0); a high-priority stream was measured and
  // deleted: no gain beyond the noise (ADR 0092).
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithPriority(&ctx->stream_, cudaStreamNonBlocking, 0),
      "cudaStreamCreateWithPriority"));
  RETURN_IF_ERROR(BookLibraryDeviceMemory(
      arena, owner + "/library_handles", [&]() -> absl::Status {
        RETURN_IF_ERROR(
            CublasStatus(cublasCreate(&ctx->cublas_), "cublasCreate"));
        RETURN_IF_ERROR(
            CublasStatus(cublasLtCreate(&ctx->cublas_lt_), "cublasLtCreate"));
        return CudnnStatus(cudnnCreate(&ctx->cudnn_), "cudnnCreate");
      }));

  RETURN_IF_ERROR(CublasStatus(cublasSetStream(ctx->cublas_, ctx->stream_),
                               "cublasSetStream"));
  RETURN_IF_ERROR(
      CudnnStatus(cudnnSetStream(ctx->cudnn_, ctx->stream_), "cudnnSetStream"));
  RETURN_IF_ERROR(CublasStatus(
      cublasSetMathMode(ctx->cublas_, precision == Precision::kFp32
                                          ? CUBLAS_PEDANTIC_MATH
                                          : CUBLAS_TF32_TENSOR_OP_MATH),
      "cublasSetMathMode"));
  // cuBLAS gets its workspace from the arena (no hidden cudaMalloc, and
  // graph capture needs a fixed workspace).
  constexpr size_t kCublasWorkspace = size_t{32} << 20;
  ASSIGN_OR_RETURN(ctx->cublas_workspace_,
                   DeviceBuffer::Allocate(arena, kCublasWorkspace,
                                          owner + "/cublas_workspace"));
  RETURN_IF_ERROR(CublasStatus(
      cublasSetWorkspace(ctx->cublas_, ctx->cublas_workspace_.data(),
                         kCublasWorkspace),
      "cublasSetWorkspace"));
  if (workspace_bytes > 0) {
    ASSIGN_OR_RETURN(ctx->workspace_,
                     DeviceBuffer::Allocate(arena, workspace_bytes,
                                            owner + "/cudnn_workspace"));
  }
  return ctx;
}

CudaContext::~CudaContext() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_lt_ != nullptr) cublasLtDestroy(cublas_lt_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

}  // namespace diarization::models::cuda
