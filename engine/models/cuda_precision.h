// The numeric precision of a CUDA network (DESIGN.md): "fp32" runs cuBLAS in
// pedantic FP32 and cuDNN convolutions with FMA-only kernels; "tf32" lets
// both use TF32 tensor cores; "mixed" (embedding only, opt-in under a gate,
// docs/benchmarks.md) runs the ResNet convolutions on FP16 tensors with FP32
// accumulation (Conv2d::Shape::half) and everything else as "tf32".
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_PRECISION_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_PRECISION_H_

#include <string>

#include "absl/status/statusor.h"

namespace diarization::models::cuda {

enum class Precision { kFp32, kTf32, kMixed };
absl::StatusOr<Precision> ParsePrecision(const std::string& name);
std::string PrecisionName(Precision p);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_PRECISION_H_
