// Kaldi fbank on the GPU, the steps around the mel product (models.md §3),
// in the same op order and precision as engine/models/fbank.cc (the CPU
// backend): frames are scaled, mean-removed, pre-emphasised and windowed in
// float32, transformed by a zero-padded 512-point float64 FFT (the CPU uses
// FFTW's), power = float(|X|)^2 — one kernel, frames and spectrum stay in
// shared memory; the mel product is a float32 GEMM (caller); then log with
// the float epsilon floor and the per-chunk mean normalisation over frames.
#ifndef DIARIZATION_KERNELS_FBANK_H_
#define DIARIZATION_KERNELS_FBANK_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kFbankFrameLength = 400;
inline constexpr int kFbankFrameShift = 160;
inline constexpr int kFbankBins = 257;  // 512-point real DFT
inline constexpr int kFbankMel = 80;

struct FbankSpectrumParams {
  const float* audio = nullptr;   // (batch, samples_per_item) in [-1, 1]
  const float* window = nullptr;  // (400) symmetric Hamming, float32
  float* power = nullptr;         // (batch, frames_per_item, 257)
  int64_t batch = 0;
  int64_t samples_per_item = 0;
  int frames_per_item = 0;
};
absl::Status LaunchFbankSpectrumPower(const FbankSpectrumParams& p,
                                      cudaStream_t stream);

// mel: (batch, frames, 80) mel energies. out: (batch, 80, frames) =
// log(max(mel, eps)) minus its mean over frames (per item and bin): the
// ResNet's (B, 1, 80, T) input layout.
absl::Status LaunchFbankLogNormalize(const float* mel, float* out,
                                     int64_t batch, int frames,
                                     cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_FBANK_H_
