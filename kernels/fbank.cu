#include <cfloat>
#include <string>

#include "kernels/fbank.h"

namespace diarization::kernels {
namespace {

absl::Status LaunchStatus(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(std::string(what) +
                             " launch failed: " + cudaGetErrorString(err));
}

// One block (128 threads) per frame.
__global__ void FramesKernel(const float* __restrict__ audio,
                             const float* __restrict__ window,
                             double* __restrict__ frames,
                             int64_t samples_per_item, int frames_per_item) {
  const int64_t frame = blockIdx.x;  // over batch * frames_per_item
  const int64_t item = frame / frames_per_item;
  const int m = static_cast<int>(frame % frames_per_item);
  const float* src = audio + item * samples_per_item +
                     static_cast<int64_t>(m) * kFbankFrameShift;
  __shared__ float s[kFbankFrameLength];
  __shared__ double partial[128];
  double sum = 0.0;
  for (int j = threadIdx.x; j < kFbankFrameLength; j += blockDim.x) {
    const float v = src[j] * 32768.0f;
    s[j] = v;
    sum += v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int w = 64; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  // Same rounding as the CPU: double sum -> float, then float division.
  const float mean =
      static_cast<float>(partial[0]) / static_cast<float>(kFbankFrameLength);
  double* out = frames + frame * kFbankFftLength;
  for (int j = threadIdx.x; j < kFbankFftLength; j += blockDim.x) {
    if (j >= kFbankFrameLength) {  // the FFT's zero padding
      out[j] = 0.0;
      continue;
    }
    const float cur = s[j] - mean;
    const float prev = (j == 0 ? s[0] : s[j - 1]) - mean;
    const float emph = 0.97f * prev;
    const float y = __fsub_rn(cur, emph);
    out[j] = static_cast<double>(__fmul_rn(y, window[j]));
  }
}

__global__ void PowerKernel(const double* __restrict__ spectrum,
                            float* __restrict__ power, int64_t rows) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * kFbankBins) return;
  // Interleaved (re, im) per bin, cuFFT's D2Z output.
  const double re = spectrum[2 * i];
  const double im = spectrum[2 * i + 1];
  const float mag =
      static_cast<float>(sqrt(__dadd_rn(__dmul_rn(re, re), __dmul_rn(im, im))));
  power[i] = __fmul_rn(mag, mag);
}

// One block per (item, bin); frames fit in shared memory (998 for 10 s).
__global__ void LogNormalizeKernel(const float* __restrict__ mel,
                                   float* __restrict__ out, int frames) {
  extern __shared__ float logs[];
  __shared__ double partial[256];
  const int64_t item = blockIdx.x;
  const int bin = blockIdx.y;
  const float* src = mel + item * frames * kFbankMel + bin;
  double sum = 0.0;
  for (int m = threadIdx.x; m < frames; m += blockDim.x) {
    const float v =
        logf(fmaxf(src[static_cast<int64_t>(m) * kFbankMel], FLT_EPSILON));
    logs[m] = v;
    sum += v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  const float mean = static_cast<float>(partial[0] / frames);
  float* dst = out + (item * kFbankMel + bin) * static_cast<int64_t>(frames);
  for (int m = threadIdx.x; m < frames; m += blockDim.x)
    dst[m] = __fsub_rn(logs[m], mean);
}

}  // namespace

absl::Status LaunchFbankFrames(const FbankFramesParams& p,
                               cudaStream_t stream) {
  if (p.audio == nullptr || p.window == nullptr || p.frames == nullptr ||
      p.batch <= 0 || p.frames_per_item <= 0 ||
      static_cast<int64_t>(p.frames_per_item - 1) * kFbankFrameShift +
              kFbankFrameLength >
          p.samples_per_item) {
    return absl::InvalidArgumentError(
        "LaunchFbankFrames: bad buffers or sizes");
  }
  FramesKernel<<<static_cast<unsigned>(p.batch * p.frames_per_item), 128, 0,
                 stream>>>(p.audio, p.window, p.frames, p.samples_per_item,
                           p.frames_per_item);
  return LaunchStatus("FbankFramesKernel");
}

absl::Status LaunchFbankPower(const double* spectrum, float* power,
                              int64_t rows, cudaStream_t stream) {
  if (spectrum == nullptr || power == nullptr || rows <= 0) {
    return absl::InvalidArgumentError("LaunchFbankPower: bad buffers or rows");
  }
  const int64_t n = rows * kFbankBins;
  PowerKernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      spectrum, power, rows);
  return LaunchStatus("FbankPowerKernel");
}

absl::Status LaunchFbankLogNormalize(const float* mel, float* out,
                                     int64_t batch, int frames,
                                     cudaStream_t stream) {
  if (mel == nullptr || out == nullptr || batch <= 0 || frames <= 0 ||
      frames > 8192) {
    return absl::InvalidArgumentError(
        "LaunchFbankLogNormalize: bad buffers, or frames outside 1..8192");
  }
  const dim3 grid(static_cast<unsigned>(batch), kFbankMel);
  LogNormalizeKernel<<<grid, 256, frames * sizeof(float), stream>>>(mel, out,
                                                                    frames);
  return LaunchStatus("FbankLogNormalizeKernel");
}

}  // namespace diarization::kernels
