// The linear layer of the CUDA backend as one cuBLASLt GEMM (row-major)
// whose epilogue adds the bias, so no pass writes a broadcast bias for the
// GEMM to read back (the LSTM input projections of the segmentation model
// wrote and re-read 290 MB per layer that way at a batch of 121 windows).
//
// Contract: Forward may be called with any row count; the plan for a row
// count (cuBLASLt's layouts and its heuristic's first algorithm) is made on
// its first use and kept, so later calls, and CUDA-graph captures of them,
// do only the GEMM launch. Where cuBLASLt offers no algorithm with the bias
// epilogue for a shape, that shape runs as the bias broadcast plus
// cublasSgemm (beta = 1), torch's addmm, and says so once on stderr.
// Precision follows the context: FP32 contexts compute in FP32 (no tensor
// cores), TF32 and mixed ones allow TF32 inputs, as cublasSgemm does under
// the context's math mode. Not thread-safe: one caller (the model's) at a time.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_LINEAR_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_LINEAR_H_

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_context.h"

namespace diarization::models::cuda {

// Y (rows, out) = X (rows, in) · Wᵀ + bias, row-major, W (out, in) resident.
class Linear {
 public:
  static absl::StatusOr<std::unique_ptr<Linear>> Create(
      CudaContext* ctx, int in, int out, std::span<const float> weight,
      std::span<const float> bias, const std::string& owner);
  ~Linear();
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;

  // Enqueues the GEMM on the context's stream. `y` must not overlap `x`.
  absl::Status Forward(const float* x, int64_t rows, float* y);
  int in() const { return in_; }
  int out() const { return out_; }
  // Whether `rows` runs with the fused bias epilogue (planned on first use).
  absl::StatusOr<bool> FusedFor(int64_t rows);

 private:
  struct Plan {
    cublasLtMatrixLayout_t x = nullptr, y = nullptr;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace_bytes = 0;
    bool fused = false;
  };
  Linear() = default;
  absl::StatusOr<const Plan*> PlanFor(int64_t rows);
  absl::Status ForwardUnfused(const float* x, int64_t rows, float* y);

  CudaContext* ctx_ = nullptr;
  std::string owner_;
  int in_ = 0, out_ = 0;
  DeviceBuffer weight_;
  DeviceBuffer bias_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t w_ = nullptr;
  std::map<int64_t, Plan> plans_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_LINEAR_H_
