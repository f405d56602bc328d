#include "engine/pipeline/powerset.h"

#include <cstddef>

namespace diarization::pipeline {

const float kPowersetMapping[7][3] = {
    {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1},
};

void PowersetToMultilabel(std::span<const float> log_probs,
                          std::span<float> segmentations) {
  const size_t frames = log_probs.size() / 7;
  for (size_t f = 0; f < frames && 3 * f + 2 < segmentations.size(); ++f) {
    const float* row = log_probs.data() + 7 * f;
    int best = 0;
    // Strict '>' keeps the first maximum; a NaN never wins (torch.argmax
    // would pick it, but the network never produces NaN on finite audio).
    for (int k = 1; k < 7; ++k) {
      if (row[k] > row[best]) best = k;
    }
    for (int s = 0; s < 3; ++s)
      segmentations[3 * f + s] = kPowersetMapping[best][s];
  }
}

}  // namespace diarization::pipeline
