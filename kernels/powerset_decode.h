// Powerset → multilabel decoding on the GPU (models.md §2).
//
// For each frame, k* = argmax over the 7 powerset log-probabilities (first
// index on ties, as torch.argmax) and the 3 speaker activities are row k* of
// the powerset mapping {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}.
#ifndef DIARIZATION_KERNELS_POWERSET_DECODE_H_
#define DIARIZATION_KERNELS_POWERSET_DECODE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kPowersetClasses = 7;
inline constexpr int kLocalSpeakers = 3;

struct PowersetDecodeParams {
  // (frames, 7) float32, row-major, device memory.
  const float* log_probs = nullptr;
  // (frames, 3) float32 0/1, row-major, device memory.
  float* activities = nullptr;
  int64_t frames = 0;
};

absl::Status LaunchPowersetDecode(const PowersetDecodeParams& params,
                                  cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_POWERSET_DECODE_H_
