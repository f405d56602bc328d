#include "engine/pipeline/powerset.h"

#include <cstddef>

namespace diarization::pipeline {

const float kPowersetMapping[kPowersetClasses][kLocalSpeakers] = {
    {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1},
};

void PowersetToMultilabel(std::span<const float> log_probs,
                          std::span<float> segmentations) {
  constexpr size_t kClasses = kPowersetClasses, kSpeakers = kLocalSpeakers;
  const size_t frames = log_probs.size() / kClasses;
  for (size_t f = 0;
       f < frames && kSpeakers * f + kSpeakers - 1 < segmentations.size();
       ++f) {
    const float* row = log_probs.data() + kClasses * f;
    size_t best = 0;
    // Strict '>' keeps the first maximum; a NaN never wins (torch.argmax
    // would pick it, but the network never produces NaN on finite audio).
    for (size_t k = 1; k < kClasses; ++k) {
      if (row[k] > row[best]) best = k;
    }
    for (size_t s = 0; s < kSpeakers; ++s)
      segmentations[kSpeakers * f + s] = kPowersetMapping[best][s];
  }
}

}  // namespace diarization::pipeline
