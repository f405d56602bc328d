#include "engine/models/cuda_weights.h"

#include <span>

#include "absl/strings/str_cat.h"

namespace diarization::models::cuda {

absl::StatusOr<std::vector<float>> ReadTensor(const SafetensorsFile& file,
                                              const std::string& name,
                                              int64_t expected_elements) {
  const TensorView* t = file.Find(name);
  if (t == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path(), ": tensor '", name, "' is missing"));
  }
  if (t->dtype != DType::kF32 || t->num_elements() != expected_elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path(), ": tensor '", name, "' must be F32 with ",
                     expected_elements, " elements, has ", t->num_elements()));
  }
  std::span<const float> v = t->f32();
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace diarization::models::cuda
