#include "engine/models/cuda_strided_pointwise_conv.h"

#include <cublas_v2.h>

#include "absl/strings/str_cat.h"
#include "engine/models/cuda_status.h"

namespace diarization::models::cuda {

bool StridedPointwiseConvSupported(const Conv2d& layer, int h, int w) {
  const Conv2d::Shape& s = layer.shape();
  return s.channels_last && s.kernel_h == 1 && s.kernel_w == 1 &&
         s.pad_h == 0 && s.pad_w == 0 && s.stride_h >= 1 && s.stride_w >= 1 &&
         h > 0 && w > 0 && h == s.stride_h * layer.OutH(h);
}

absl::Status LaunchStridedPointwiseConv(CudaContext* ctx, const Conv2d& layer,
                                        const void* x, int n, int h, int w,
                                        void* y) {
  if (!StridedPointwiseConvSupported(layer, h, w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchStridedPointwiseConv: not a 1x1 channels-last convolution "
        "whose output rows tile an input of height ",
        h));
  }
  const Conv2d::Shape& s = layer.shape();
  const int c = s.in_channels, k = s.out_channels;
  const int out_h = layer.OutH(h), out_w = layer.OutW(w);
  const long long batch = static_cast<long long>(n) * out_h;
  const cudaDataType_t type = s.half ? CUDA_R_16F : CUDA_R_32F;
  // FP32 accumulation either way; TF32 tensor cores for float32 tensors.
  const cublasComputeType_t compute =
      s.half ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major: y_b (k × out_w) = Wᵀ' (k × c) · x_b (c × out_w), W stored
  // row-major k × c = column-major c × k, hence op T with lda = c.
  return CublasStatus(
      cublasGemmStridedBatchedEx(
          ctx->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, k, out_w, c, &alpha,
          layer.weights(), type, c, 0, x, type, s.stride_w * c,
          static_cast<long long>(s.stride_h) * w * c, &beta, y, type, k,
          static_cast<long long>(out_w) * k, batch, compute,
          CUBLAS_GEMM_DEFAULT),
      absl::StrCat("cublasGemmStridedBatchedEx (1x1/", s.stride_h,
                   " convolution ", k, "<-", c, " on ", n, "x", h, "x", w,
                   ")"));
}

}  // namespace diarization::models::cuda
