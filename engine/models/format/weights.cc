#include "engine/models/format/weights.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace diarization::models {

absl::StatusOr<std::vector<float>> ReadF32(const SafetensorsFile& file,
                                           const std::string& name,
                                           const std::vector<int64_t>& shape) {
  const TensorView* t = file.Find(name);
  if (t == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("tensor '", name, "' missing in ", file.path()));
  }
  if (t->dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' in ", file.path(),
                     " must be F32"));
  }
  if (t->shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' in ", file.path(), " has shape [",
                     absl::StrJoin(t->shape, ","), "], expected [",
                     absl::StrJoin(shape, ","), "]"));
  }
  std::span<const float> data = t->f32();
  return std::vector<float>(data.begin(), data.end());
}

}  // namespace diarization::models
