// Test-only: deterministic random weights for PyanNet and WeSpeakerResNet34
// under pyannote's state_dict names, written as safetensors, with
// PyTorch-like initialisation scales (so activations stay in a realistic
// range), and the SincNet buffers (window_, n_) as asteroid defines them.
#ifndef DIARIZATION_TESTING_RANDOM_WEIGHTS_H_
#define DIARIZATION_TESTING_RANDOM_WEIGHTS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace diarization::testing {

absl::Status WriteRandomPyanNet(const std::string& path, uint32_t seed);
absl::Status WriteRandomResNet34(const std::string& path, uint32_t seed);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_RANDOM_WEIGHTS_H_
