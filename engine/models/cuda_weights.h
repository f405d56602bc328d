// Reading the CUDA networks' weights from a safetensors file into host
// copies (uploaded to the arena by the layers).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_WEIGHTS_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/safetensors.h"

namespace diarization::models::cuda {

// Host copy of a float32 tensor; InvalidArgument when it is missing, not
// F32, or does not hold `expected_elements` values.
absl::StatusOr<std::vector<float>> ReadTensor(const SafetensorsFile& file,
                                              const std::string& name,
                                              int64_t expected_elements);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_WEIGHTS_H_
