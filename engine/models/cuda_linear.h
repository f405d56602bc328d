// The linear layer of the CUDA backend as one cuBLAS GEMM (row-major).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_LINEAR_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_LINEAR_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda_buffers.h"
#include "engine/models/cuda_context.h"

namespace diarization::models::cuda {

// Y (rows, out) = X (rows, in) · Wᵀ + bias, row-major, W (out, in) resident.
class Linear {
 public:
  static absl::StatusOr<std::unique_ptr<Linear>> Create(
      CudaContext* ctx, int in, int out, std::span<const float> weight,
      std::span<const float> bias, const std::string& owner);
  absl::Status Forward(const float* x, int64_t rows, float* y);
  int in() const { return in_; }
  int out() const { return out_; }

 private:
  Linear() = default;
  CudaContext* ctx_ = nullptr;
  int in_ = 0, out_ = 0;
  DeviceBuffer weight_;
  DeviceBuffer bias_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_LINEAR_H_
