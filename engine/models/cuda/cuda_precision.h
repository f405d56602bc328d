// The numeric precision of a CUDA network (DESIGN.md): "fp32" runs cuBLAS in
// pedantic FP32 and cuDNN convolutions with FMA-only kernels; "tf32" lets
// both use TF32 tensor cores (embedding only). An FP16 "mixed" mode was
// tried and deleted: it gained nothing on the graph trunk and failed its
// accuracy gate three times (ADR 0092).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_PRECISION_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_PRECISION_H_

#include <string>

#include "absl/status/statusor.h"

namespace diarization::models::cuda {

enum class Precision { kFp32, kTf32 };
absl::StatusOr<Precision> ParsePrecision(const std::string& name);
std::string PrecisionName(Precision p);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_PRECISION_H_
