#include "engine/models/cuda_linear.h"

#include <cublas_v2.h>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda_status.h"
#include "kernels/nn_ops.h"

namespace diarization::models::cuda {

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(
    CudaContext* ctx, int in, int out, std::span<const float> weight,
    std::span<const float> bias, const std::string& owner) {
  if (weight.size() != static_cast<size_t>(in) * out ||
      bias.size() != static_cast<size_t>(out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear ", owner, ": weight ", weight.size(), " / bias ",
                     bias.size(), " values, expected ", in * out, " / ", out));
  }
  std::unique_ptr<Linear> lin(new Linear());
  lin->ctx_ = ctx;
  lin->in_ = in;
  lin->out_ = out;
  ASSIGN_OR_RETURN(lin->weight_,
                   DeviceBuffer::FromHost(ctx->arena(), weight, owner));
  ASSIGN_OR_RETURN(lin->bias_,
                   DeviceBuffer::FromHost(ctx->arena(), bias, owner));
  return lin;
}

absl::Status Linear::Forward(const float* x, int64_t rows, float* y) {
  // Bias first, then Y += X·Wᵀ (beta = 1), as torch's addmm does.
  RETURN_IF_ERROR(
      kernels::LaunchBroadcastRows(bias_.f32(), y, rows, out_, ctx_->stream()));
  const float alpha = 1.0f, beta = 1.0f;
  // Column-major view: Yᵀ (out × rows) = W (out × in, stored as in × out) ᵀ ·
  // Xᵀ.
  return CublasStatus(
      cublasSgemm(ctx_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_,
                  static_cast<int>(rows), in_, &alpha, weight_.f32(), in_, x,
                  in_, &beta, y, out_),
      absl::StrCat("cublasSgemm (linear ", in_, "->", out_, ")"));
}

}  // namespace diarization::models::cuda
