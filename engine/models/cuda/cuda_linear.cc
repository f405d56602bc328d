#include "engine/models/cuda/cuda_linear.h"

#include <cublas_v2.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "kernels/nn_ops.h"

namespace diarization::models::cuda {
namespace {

template <typename T>
absl::Status SetDesc(cublasLtMatmulDesc_t d,
                     cublasLtMatmulDescAttributes_t attr, const T& value,
                     const char* what) {
  return CublasStatus(
      cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)), what);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(
    CudaContext* ctx, int in, int out, std::span<const float> weight,
    std::span<const float> bias, const std::string& owner) {
  if (in < 1 || out < 1 || weight.size() != static_cast<size_t>(in) * out ||
      bias.size() != static_cast<size_t>(out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Linear ", owner, ": weight ", weight.size(), " / bias ", bias.size(),
        " values, expected ", int64_t{in} * out, " / ", out));
  }
  std::unique_ptr<Linear> lin(new Linear());
  lin->ctx_ = ctx;
  lin->owner_ = owner;
  lin->in_ = in;
  lin->out_ = out;
  ASSIGN_OR_RETURN(lin->weight_,
                   DeviceBuffer::FromHost(ctx->arena(), weight, owner));
  ASSIGN_OR_RETURN(lin->bias_,
                   DeviceBuffer::FromHost(ctx->arena(), bias, owner));
  // Column-major view, as cuBLAS sees row-major data: Yᵀ (out × rows) =
  // op(W) · Xᵀ with W stored as (in × out), op = transpose.
  const cublasComputeType_t compute = ctx->precision() == Precision::kFp32
                                          ? CUBLAS_COMPUTE_32F
                                          : CUBLAS_COMPUTE_32F_FAST_TF32;
  RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescCreate(&lin->desc_, compute, CUDA_R_32F),
                   "cublasLtMatmulDescCreate"));
  RETURN_IF_ERROR(SetDesc(lin->desc_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T,
                          "cublasLt TRANSA"));
  RETURN_IF_ERROR(SetDesc(lin->desc_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N,
                          "cublasLt TRANSB"));
  RETURN_IF_ERROR(SetDesc(lin->desc_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                          CUBLASLT_EPILOGUE_BIAS, "cublasLt EPILOGUE"));
  RETURN_IF_ERROR(SetDesc(lin->desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                          lin->bias_.data(), "cublasLt BIAS_POINTER"));
  RETURN_IF_ERROR(SetDesc(lin->desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                          CUDA_R_32F, "cublasLt BIAS_DATA_TYPE"));
  RETURN_IF_ERROR(CublasStatus(
      cublasLtMatrixLayoutCreate(&lin->w_, CUDA_R_32F, in, out, in),
      "cublasLtMatrixLayoutCreate (weight)"));
  return lin;
}

Linear::~Linear() {
  for (auto& [rows, plan] : plans_) {
    if (plan.x != nullptr) cublasLtMatrixLayoutDestroy(plan.x);
    if (plan.y != nullptr) cublasLtMatrixLayoutDestroy(plan.y);
  }
  if (w_ != nullptr) cublasLtMatrixLayoutDestroy(w_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

absl::StatusOr<const Linear::Plan*> Linear::PlanFor(int64_t rows) {
  if (auto it = plans_.find(rows); it != plans_.end()) return &it->second;
  Plan plan;
  auto cleanup = [&plan] {
    if (plan.x != nullptr) cublasLtMatrixLayoutDestroy(plan.x);
    if (plan.y != nullptr) cublasLtMatrixLayoutDestroy(plan.y);
  };
  absl::Status made = CublasStatus(
      cublasLtMatrixLayoutCreate(&plan.x, CUDA_R_32F, in_, rows, in_),
      "cublasLtMatrixLayoutCreate (input)");
  if (made.ok()) {
    made = CublasStatus(
        cublasLtMatrixLayoutCreate(&plan.y, CUDA_R_32F, out_, rows, out_),
        "cublasLtMatrixLayoutCreate (output)");
  }
  cublasLtMatmulPreference_t pref = nullptr;
  if (made.ok()) {
    made = CublasStatus(cublasLtMatmulPreferenceCreate(&pref),
                        "cublasLtMatmulPreferenceCreate");
  }
  const size_t max_ws = ctx_->cublas_workspace_bytes();
  if (made.ok()) {
    made = CublasStatus(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                            &max_ws, sizeof(max_ws)),
                        "cublasLt MAX_WORKSPACE_BYTES");
  }
  if (made.ok()) {
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        ctx_->cublas_lt(), desc_, w_, plan.x, plan.y, plan.y, pref, 1, &result,
        &found);
    // NOT_SUPPORTED (or no result) means no algorithm for this shape with
    // the epilogue: the unfused path below. Anything else is a failure.
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 &&
        result.state == CUBLAS_STATUS_SUCCESS) {
      plan.algo = result.algo;
      plan.workspace_bytes = result.workspaceSize;
      plan.fused = true;
    } else if (st != CUBLAS_STATUS_SUCCESS &&
               st != CUBLAS_STATUS_NOT_SUPPORTED) {
      made = CublasStatus(st, "cublasLtMatmulAlgoGetHeuristic");
    } else {
      std::fprintf(stderr,
                   "cuda linear %s (%d->%d): no cuBLASLt algorithm with the "
                   "bias epilogue for %lld rows; bias broadcast + "
                   "cublasSgemm instead\n",
                   owner_.c_str(), in_, out_, static_cast<long long>(rows));
    }
  }
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (!made.ok()) {
    cleanup();
    return made;
  }
  return &plans_.emplace(rows, plan).first->second;
}

absl::StatusOr<bool> Linear::FusedFor(int64_t rows) {
  ASSIGN_OR_RETURN(const Plan* plan, PlanFor(rows));
  return plan->fused;
}

absl::Status Linear::Forward(const float* x, int64_t rows, float* y) {
  if (rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear ", owner_, ": ", rows, " rows"));
  }
  ASSIGN_OR_RETURN(const Plan* plan, PlanFor(rows));
  if (!plan->fused) return ForwardUnfused(x, rows, y);
  const float alpha = 1.0f, beta = 0.0f;
  return CublasStatus(
      cublasLtMatmul(ctx_->cublas_lt(), desc_, &alpha, weight_.f32(), w_, x,
                     plan->x, &beta, y, plan->y, y, plan->y, &plan->algo,
                     ctx_->cublas_workspace(), plan->workspace_bytes,
                     ctx_->stream()),
      absl::StrCat("cublasLtMatmul (linear ", owner_, " ", in_, "->", out_,
                   ", ", rows, " rows)"));
}

absl::Status Linear::ForwardUnfused(const float* x, int64_t rows, float* y) {
  // Bias first, then Y += X·Wᵀ (beta = 1), as torch's addmm does.
  if (rows > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Linear ", owner_, ": ", rows, " rows is over cublasSgemm's limit"));
  }
  RETURN_IF_ERROR(
      kernels::LaunchBroadcastRows(bias_.f32(), y, rows, out_, ctx_->stream()));
  const float alpha = 1.0f, beta = 1.0f;
  return CublasStatus(
      cublasSgemm(ctx_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_,
                  static_cast<int>(rows), in_, &alpha, weight_.f32(), in_, x,
                  in_, &beta, y, out_),
      absl::StrCat("cublasSgemm (linear ", owner_, " ", in_, "->", out_, ")"));
}

}  // namespace diarization::models::cuda
