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

constexpr int kFftSize = 512;  // 2 * (kFbankBins - 1)
constexpr int kFftLog2 = 9;
constexpr int kSpectrumThreads = kFftSize / 2;  // one butterfly per stage
static_assert(kFbankBins == kFftSize / 2 + 1);

// One block (256 threads) per frame: Kaldi's float32 steps (scale, mean
// removal, pre-emphasis, window) exactly as engine/models/fbank.cc, then the
// zero-padded 512-point DFT in float64 as a radix-2 FFT in shared memory (the
// CPU backend uses FFTW's float64 FFT; the DFT as a dense float64 GEMM, as
// before, cost 13 GFLOP and two round trips of ~100 MB per batch of 32
// windows), then power = float(|X|)^2.
__global__ void __launch_bounds__(kSpectrumThreads)
    SpectrumPowerKernel(const float* __restrict__ audio,
                        const float* __restrict__ window,
                        float* __restrict__ power, int64_t samples_per_item,
                        int frames_per_item) {
  const int64_t frame = blockIdx.x;  // over batch * frames_per_item
  const int64_t item = frame / frames_per_item;
  const int m = static_cast<int>(frame % frames_per_item);
  const float* src = audio + item * samples_per_item +
                     static_cast<int64_t>(m) * kFbankFrameShift;
  const int t = threadIdx.x;
  __shared__ float s[kFbankFrameLength];
  __shared__ double partial[128];
  __shared__ double re[kFftSize], im[kFftSize];
  __shared__ double wre[kFftSize / 2], wim[kFftSize / 2];
  // Twiddles exp(-2πi·t/512) = cospi(t/256) − i·sinpi(t/256) (1 ulp).
  sincospi(static_cast<double>(t) / (kFftSize / 2), &wim[t], &wre[t]);
  wim[t] = -wim[t];
  // The frame sum as the earlier 128-thread kernel did it (same partial sums,
  // same tree), so the mean keeps its bits.
  if (t < 128) {
    double sum = 0.0;
    for (int j = t; j < kFbankFrameLength; j += 128) {
      const float v = src[j] * 32768.0f;
      s[j] = v;
      sum += v;
    }
    partial[t] = sum;
  }
  __syncthreads();
  for (int w = 64; w > 0; w >>= 1) {
    if (t < w) partial[t] += partial[t + w];
    __syncthreads();
  }
  // Same rounding as the CPU: double sum -> float, then float division.
  const float mean =
      static_cast<float>(partial[0]) / static_cast<float>(kFbankFrameLength);
  // Windowed samples into bit-reversed positions (decimation in time); the
  // padding 400..511 is zero.
  for (int j = t; j < kFftSize; j += kSpectrumThreads) {
    double x = 0.0;
    if (j < kFbankFrameLength) {
      const float cur = s[j] - mean;
      const float prev = (j == 0 ? s[0] : s[j - 1]) - mean;
      const float emph = 0.97f * prev;
      const float y = __fsub_rn(cur, emph);
      x = static_cast<double>(__fmul_rn(y, window[j]));
    }
    const int r = __brev(static_cast<unsigned>(j)) >> (32 - kFftLog2);
    re[r] = x;
    im[r] = 0.0;
  }
  __syncthreads();
  // log2(512) stages; thread t joins element i with i + half.
  for (int half = 1; half < kFftSize; half <<= 1) {
    const int pos = t & (half - 1);
    const int i = ((t - pos) << 1) + pos;
    const int j = i + half;
    const int tw = pos * (kFftSize / 2 / half);
    const double c = wre[tw], d = wim[tw];
    const double br = __dsub_rn(__dmul_rn(re[j], c), __dmul_rn(im[j], d));
    const double bi = __dadd_rn(__dmul_rn(re[j], d), __dmul_rn(im[j], c));
    const double ar = re[i], ai = im[i];
    re[i] = __dadd_rn(ar, br);
    im[i] = __dadd_rn(ai, bi);
    re[j] = __dsub_rn(ar, br);
    im[j] = __dsub_rn(ai, bi);
    __syncthreads();
  }
  float* out = power + frame * kFbankBins;
  for (int k = t; k < kFbankBins; k += kSpectrumThreads) {
    const float mag = static_cast<float>(
        sqrt(__dadd_rn(__dmul_rn(re[k], re[k]), __dmul_rn(im[k], im[k]))));
    out[k] = __fmul_rn(mag, mag);
  }
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

absl::Status LaunchFbankSpectrumPower(const FbankSpectrumParams& p,
                                      cudaStream_t stream) {
  if (p.audio == nullptr || p.window == nullptr || p.power == nullptr ||
      p.batch <= 0 || p.frames_per_item <= 0 ||
      static_cast<int64_t>(p.frames_per_item - 1) * kFbankFrameShift +
              kFbankFrameLength >
          p.samples_per_item) {
    return absl::InvalidArgumentError(
        "LaunchFbankSpectrumPower: bad buffers or sizes");
  }
  SpectrumPowerKernel<<<static_cast<unsigned>(p.batch * p.frames_per_item),
                        kSpectrumThreads, 0, stream>>>(
      p.audio, p.window, p.power, p.samples_per_item, p.frames_per_item);
  return LaunchStatus("FbankSpectrumPowerKernel");
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
