// Reading float32 network weights by pyannote state_dict name, with the
// shape checked, into owned vectors (the mapped file may be closed after a
// model is built). The one weight reader of every backend (CPU and CUDA),
// so the same bad file gives the same error on each.
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_WEIGHTS_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/format/safetensors.h"

namespace diarization::models {

// The tensor `name` as float32, which must have exactly `shape`.
// NotFound when absent; InvalidArgument for another dtype or shape.
absl::StatusOr<std::vector<float>> ReadF32(const SafetensorsFile& file,
                                           const std::string& name,
                                           const std::vector<int64_t>& shape);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_WEIGHTS_H_
