#include "absl/strings/str_cat.h"
#include "kernels/window_gather.h"

namespace diarization::kernels {
namespace {

// One grid row (blockIdx.y) per window; threads stride over its samples.
// Indices are checked against audio_samples as well as ends[i], so a bad
// offset reads zeros instead of memory outside the upload.
__global__ void GatherWindowsKernel(const float* __restrict__ audio,
                                    int64_t audio_samples,
                                    const int64_t* __restrict__ starts,
                                    const int64_t* __restrict__ ends,
                                    float* __restrict__ windows,
                                    int64_t window_samples) {
  const int item = blockIdx.y;
  const int64_t start = starts[item];
  int64_t end = ends[item];
  if (end > audio_samples) end = audio_samples;
  float* out = windows + item * window_samples;
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       j < window_samples; j += int64_t{gridDim.x} * blockDim.x) {
    const int64_t src = start + j;
    out[j] = (src >= 0 && src < end) ? audio[src] : 0.0f;
  }
}

}  // namespace

absl::Status LaunchGatherWindows(const GatherWindowsParams& p,
                                 cudaStream_t stream) {
  if (p.batch < 0 || p.window_samples <= 0 || p.audio_samples < 0 ||
      (p.batch > 0 && (p.audio == nullptr || p.starts == nullptr ||
                       p.ends == nullptr || p.windows == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchGatherWindows: batch ", p.batch,
                     ", window_samples ", p.window_samples, ", audio_samples ",
                     p.audio_samples, " or a null pointer"));
  }
  if (p.batch == 0) return absl::OkStatus();
  if (p.batch > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchGatherWindows: batch ", p.batch, " exceeds 65535 windows"));
  }
  constexpr int kThreads = 256;
  const int64_t blocks_x =
      (p.window_samples + kThreads * 4 - 1) / (kThreads * 4);
  const dim3 grid(static_cast<unsigned>(blocks_x < 1 ? 1 : blocks_x),
                  static_cast<unsigned>(p.batch));
  GatherWindowsKernel<<<grid, kThreads, 0, stream>>>(
      p.audio, p.audio_samples, p.starts, p.ends, p.windows, p.window_samples);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("GatherWindowsKernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
