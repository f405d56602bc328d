#include "engine/models/cuda/cuda_precision.h"

#include "absl/strings/str_cat.h"

namespace diarization::models::cuda {

absl::StatusOr<Precision> ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "tf32") return Precision::kTf32;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision '", name, "' is not supported; use fp32 or tf32"));
}

std::string PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
  }
  return "unknown";
}

}  // namespace diarization::models::cuda
