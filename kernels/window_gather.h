// Builds a batch of 10 s windows on the device from slices of longer
// recordings that crossed to the device once. pyannote's windows overlap 10×
// (10 s windows, 1 s step), so uploading each window separately moves ten
// times the audio through the host and over PCIe; a batch of consecutive
// windows of one recording needs only its span, (n − 1)·step + 160000
// samples. The gather is a device-to-device copy (bandwidth-bound, a few
// microseconds per batch on an H200).
#ifndef DIARIZATION_KERNELS_WINDOW_GATHER_H_
#define DIARIZATION_KERNELS_WINDOW_GATHER_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

// windows[i, j] = audio[starts[i] + j] when starts[i] + j < ends[i], else 0
// (the zero padding of the last window past the end of its recording), for
// i < batch, j < window_samples. starts/ends are device arrays of indices
// into `audio`, with 0 <= starts[i] <= ends[i] <= audio_samples and
// ends[i] - starts[i] <= window_samples.
struct GatherWindowsParams {
  const float* audio = nullptr;
  int64_t audio_samples = 0;
  const int64_t* starts = nullptr;  // (batch), device
  const int64_t* ends = nullptr;    // (batch), device
  float* windows = nullptr;         // (batch, window_samples)
  int batch = 0;
  int64_t window_samples = 0;
};
absl::Status LaunchGatherWindows(const GatherWindowsParams& p,
                                 cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_WINDOW_GATHER_H_
