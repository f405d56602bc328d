// Kaldi fbank on the GPU, the steps around the DFT (models.md §3), in the
// same op order and precision as engine/models/fbank.cc (the CPU backend):
// frames are scaled, mean-removed, pre-emphasised and windowed in float32 and
// handed to the DFT as float64, zero-padded to 512; the DFT is a float64
// real-to-complex FFT (cuFFT's D2Z, done by the caller; the CPU uses FFTW's
// float64 FFT); power = float(|X|)^2; the mel product is a float32 GEMM
// (caller); then log with the float epsilon floor and the per-chunk mean
// normalisation over frames.
#ifndef DIARIZATION_KERNELS_FBANK_H_
#define DIARIZATION_KERNELS_FBANK_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

inline constexpr int kFbankFrameLength = 400;
inline constexpr int kFbankFrameShift = 160;
inline constexpr int kFbankFftLength = 512;
inline constexpr int kFbankBins = kFbankFftLength / 2 + 1;  // real DFT bins
inline constexpr int kFbankMel = 80;

struct FbankFramesParams {
  const float* audio = nullptr;   // (batch, samples_per_item) in [-1, 1]
  const float* window = nullptr;  // (400) symmetric Hamming, float32
  // (batch, frames_per_item, 512): the 400 windowed samples, then zeros.
  double* frames = nullptr;
  int64_t batch = 0;
  int64_t samples_per_item = 0;
  int frames_per_item = 0;
};
absl::Status LaunchFbankFrames(const FbankFramesParams& p, cudaStream_t stream);

// spectrum: (rows, 257, 2) float64, (re, im) interleaved per bin (cuFFT's
// D2Z output); power: (rows, 257).
absl::Status LaunchFbankPower(const double* spectrum, float* power,
                              int64_t rows, cudaStream_t stream);

// mel: (batch, frames, 80) mel energies. out: (batch, 80, frames) =
// log(max(mel, eps)) minus its mean over frames (per item and bin): the
// ResNet's (B, 1, 80, T) input layout.
absl::Status LaunchFbankLogNormalize(const float* mel, float* out,
                                     int64_t batch, int frames,
                                     cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_FBANK_H_
