// Test-only float64 reference implementations, written with plain loops from
// ../shared/specs/models.md, independent of the production code paths
// (no FFT library, no oneDNN): the kaldi fbank (§3) and PyanNet (§1).
#ifndef DIARIZATION_TESTING_REFERENCE_NETWORKS_H_
#define DIARIZATION_TESTING_REFERENCE_NETWORKS_H_

#include <span>
#include <vector>

#include "engine/models/format/safetensors.h"

namespace diarization::testing {

enum class FbankTimeDomain {
  // Everything in float64: the exact value of torchaudio's formula.
  kFloat64,
  // Frame mean, pre-emphasis and window rounded to float32 as torchaudio's
  // float32 tensors do (and the float32 mel triangles); the DFT and the
  // rest in float64. Isolates the DFT's rounding.
  kTorchFloat32,
};

// (frames × 80), mean-normalised. `window32` (400) is the float32 window
// used in kTorchFloat32 mode (ignored for kFloat64).
std::vector<double> ReferenceFbank(std::span<const float> x,
                                   FbankTimeDomain mode,
                                   std::span<const float> window32 = {});

// PyanNet on one 160000-sample window, float64 throughout (SincNet filters
// from the file's parameters and buffers, in double). Returns (589 × 7)
// log-probabilities.
std::vector<double> ReferencePyanNet(const models::SafetensorsFile& f,
                                     const float* wave);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_REFERENCE_NETWORKS_H_
