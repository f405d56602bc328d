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
static_assert(kFbankBins == kFftSize / 2 + 1);
// Four frames per block, 64 threads per frame: each thread does four
// independent butterflies per stage, so the 9 stages' barriers and shared
// memory latencies are shared by four frames (one frame per 256-thread block
// measured 0.71 ms per batch of 32 windows on the H200, latency-bound).
constexpr int kFramesPerBlock = 4;
constexpr int kThreadsPerFrame = 64;
constexpr int kSpectrumThreads = kFramesPerBlock * kThreadsPerFrame;
constexpr int kButterfliesPerThread = kFftSize / 2 / kThreadsPerFrame;  // 4
constexpr int kSamplesPerThread =
    (kFbankFrameLength + kThreadsPerFrame - 1) / kThreadsPerFrame;  // 7
// One padding double after every 16: the bit-reversed stores (lanes 16
// elements apart) and the butterflies then hit distinct banks.
constexpr int kPadded = kFftSize + kFftSize / 16;
__device__ __forceinline__ int Pad(int i) { return i + (i >> 4); }

// Kaldi's float32 steps (scale, mean removal, pre-emphasis, window) exactly
// as engine/models/fbank.cc, then the zero-padded 512-point DFT in float64
// as a radix-2 decimation-in-time FFT in shared memory (the CPU backend uses
// FFTW's float64 FFT; the DFT as a dense float64 GEMM cost 13 GFLOP and two
// round trips of ~100 MB per batch of 32 windows), then power =
// float(|X|)^2.
__global__ void __launch_bounds__(kSpectrumThreads)
    SpectrumPowerKernel(const float* __restrict__ audio,
                        const float* __restrict__ window,
                        float* __restrict__ power, int64_t samples_per_item,
                        int frames_per_item, int64_t total_frames) {
  __shared__ double re[kFramesPerBlock][kPadded], im[kFramesPerBlock][kPadded];
  __shared__ double wre[kFftSize / 2], wim[kFftSize / 2];
  __shared__ double warp_sum[kSpectrumThreads / 32];
  const int t = threadIdx.x;
  const int f = t / kThreadsPerFrame;
  const int l = t % kThreadsPerFrame;
  const int64_t frame = int64_t{blockIdx.x} * kFramesPerBlock + f;
  const bool valid = frame < total_frames;
  // Twiddles exp(-2πi·t/512) = cospi(t/256) − i·sinpi(t/256) (1 ulp).
  static_assert(kSpectrumThreads == kFftSize / 2);
  sincospi(static_cast<double>(t) / (kFftSize / 2), &wim[t], &wre[t]);
  wim[t] = -wim[t];
  const float* src = audio;
  if (valid) {
    const int64_t item = frame / frames_per_item;
    const int m = static_cast<int>(frame % frames_per_item);
    src = audio + item * samples_per_item +
          static_cast<int64_t>(m) * kFbankFrameShift;
  }
  float v[kSamplesPerThread];
  double sum = 0.0;
#pragma unroll
  for (int q = 0; q < kSamplesPerThread; ++q) {
    const int j = l + q * kThreadsPerFrame;
    v[q] = (valid && j < kFbankFrameLength) ? src[j] * 32768.0f : 0.0f;
    sum += v[q];
  }
  // The frame's sum: lanes, then the frame's two warps. Exact for int16
  // audio (integers); otherwise the order moves the double sum by ~1e-16
  // and the float mean (the CPU's rounding) practically never.
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    sum += __shfl_down_sync(0xffffffffu, sum, off);
  if ((t & 31) == 0) warp_sum[t / 32] = sum;
  __syncthreads();
  const float mean = static_cast<float>(warp_sum[2 * f] + warp_sum[2 * f + 1]) /
                     static_cast<float>(kFbankFrameLength);
  // Windowed samples into bit-reversed positions; the padding 400..511 is 0.
#pragma unroll
  for (int q = 0; q < kFftSize / kThreadsPerFrame; ++q) {
    const int j = l + q * kThreadsPerFrame;
    double x = 0.0;
    if (j < kFbankFrameLength) {
      const float cur = v[q] - mean;
      // The previous sample (replicate padding at 0), scaled as above.
      const float prev = (j == 0 ? v[0] : src[j - 1] * 32768.0f) - mean;
      const float emph = 0.97f * prev;
      const float y = __fsub_rn(cur, emph);
      x = static_cast<double>(__fmul_rn(y, window[j]));
    }
    const int r = Pad(__brev(static_cast<unsigned>(j)) >> (32 - kFftLog2));
    re[f][r] = x;
    im[f][r] = 0.0;
  }
  __syncthreads();
  double* fr = re[f];
  double* fi = im[f];
  // log2(512) stages; butterfly b joins element i with i + half.
  for (int half = 1; half < kFftSize; half <<= 1) {
#pragma unroll
    for (int u = 0; u < kButterfliesPerThread; ++u) {
      const int b = l + u * kThreadsPerFrame;
      const int pos = b & (half - 1);
      const int i = ((b - pos) << 1) + pos;
      const int pi = Pad(i), pj = Pad(i + half);
      const int tw = pos * (kFftSize / 2 / half);
      const double c = wre[tw], d = wim[tw];
      const double xr = fr[pj], xi = fi[pj];
      const double br = __dsub_rn(__dmul_rn(xr, c), __dmul_rn(xi, d));
      const double bi = __dadd_rn(__dmul_rn(xr, d), __dmul_rn(xi, c));
      const double ar = fr[pi], ai = fi[pi];
      fr[pi] = __dadd_rn(ar, br);
      fi[pi] = __dadd_rn(ai, bi);
      fr[pj] = __dsub_rn(ar, br);
      fi[pj] = __dsub_rn(ai, bi);
    }
    __syncthreads();
  }
  if (!valid) return;
  float* out = power + frame * kFbankBins;
  for (int k = l; k < kFbankBins; k += kThreadsPerFrame) {
    const double xr = fr[Pad(k)], xi = fi[Pad(k)];
    const float mag = static_cast<float>(
        sqrt(__dadd_rn(__dmul_rn(xr, xr), __dmul_rn(xi, xi))));
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
  const int64_t total = p.batch * p.frames_per_item;
  SpectrumPowerKernel<<<static_cast<unsigned>((total + kFramesPerBlock - 1) /
                                              kFramesPerBlock),
                        kSpectrumThreads, 0, stream>>>(
      p.audio, p.window, p.power, p.samples_per_item, p.frames_per_item, total);
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
