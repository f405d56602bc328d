#include <string>

#include "kernels/powerset_decode.h"

namespace diarization::kernels {
namespace {

__constant__ float kMapping[kPowersetClasses][kLocalSpeakers] = {
    {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1},
};

__global__ void PowersetDecodeKernel(const float* __restrict__ log_probs,
                                     float* __restrict__ activities,
                                     int64_t frames) {
  const int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (f >= frames) return;
  const float* row = log_probs + f * kPowersetClasses;
  int best = 0;
  float best_value = row[0];
#pragma unroll
  for (int c = 1; c < kPowersetClasses; ++c) {
    // Strict '>' keeps the first maximum, as torch.argmax does. A NaN never
    // wins a comparison here; torch would return it, but the networks'
    // log-softmax cannot produce NaN from finite audio.
    if (row[c] > best_value) {
      best_value = row[c];
      best = c;
    }
  }
#pragma unroll
  for (int s = 0; s < kLocalSpeakers; ++s) {
    activities[f * kLocalSpeakers + s] = kMapping[best][s];
  }
}

}  // namespace

absl::Status LaunchPowersetDecode(const PowersetDecodeParams& params,
                                  cudaStream_t stream) {
  if (params.frames < 0 ||
      (params.frames > 0 &&
       (params.log_probs == nullptr || params.activities == nullptr))) {
    return absl::InvalidArgumentError(
        "LaunchPowersetDecode: null buffer or negative frame count");
  }
  if (params.frames == 0) return absl::OkStatus();
  constexpr int kThreads = 256;
  const int64_t blocks = (params.frames + kThreads - 1) / kThreads;
  PowersetDecodeKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      params.log_probs, params.activities, params.frames);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        std::string("PowersetDecodeKernel launch failed for ") +
        std::to_string(params.frames) + " frames: " + cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
