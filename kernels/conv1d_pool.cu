#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/conv1d_pool.h"
#include "kernels/conv1d_pool_kernel.inc"

namespace diarization::kernels {
namespace {

using conv1d_pool_internal::Conv1dMaxPool3Kernel;
using conv1d_pool_internal::kThreads;
using conv1d_pool_internal::kTilePooled;
static_assert(conv1d_pool_internal::kCo == kConv1dPoolOutChannels &&
              conv1d_pool_internal::kTaps == kConv1dPoolTaps);

}  // namespace

std::vector<float> Conv1dPoolWeights(std::span<const float> torch_weights,
                                     int in_channels) {
  constexpr int kCo = kConv1dPoolOutChannels, kK = kConv1dPoolTaps;
  std::vector<float> out(static_cast<size_t>(in_channels) * kK * kCo);
  for (int o = 0; o < kCo; ++o) {
    for (int c = 0; c < in_channels; ++c) {
      for (int k = 0; k < kK; ++k) {
        out[(static_cast<size_t>(c) * kK + k) * kCo + o] =
            torch_weights[(static_cast<size_t>(o) * in_channels + c) * kK + k];
      }
    }
  }
  return out;
}

absl::Status LaunchConv1dMaxPool3(const Conv1dPoolParams& p,
                                  cudaStream_t stream) {
  if (p.x == nullptr || p.weights == nullptr || p.bias == nullptr ||
      p.y == nullptr) {
    return absl::InvalidArgumentError(
        "LaunchConv1dMaxPool3: x, weights, bias and y must be set");
  }
  const int pooled_len = Conv1dPoolLength(p.len);
  if (p.batch <= 0 || p.in_channels <= 0 ||
      p.in_channels > kConv1dPoolMaxInChannels || pooled_len <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchConv1dMaxPool3: batch ", p.batch, ", in_channels ",
        p.in_channels, " (1 to ", kConv1dPoolMaxInChannels, "), len ", p.len,
        " (at least ", kConv1dPoolTaps + 2, ")"));
  }
  const int tiles = (pooled_len + kTilePooled - 1) / kTilePooled;
  const int64_t blocks = p.batch * tiles;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchConv1dMaxPool3: ", blocks, " blocks exceed one grid"));
  }
  Conv1dMaxPool3Kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p.x, p.weights, p.bias, p.y, p.in_channels, p.len, pooled_len, tiles);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("Conv1dMaxPool3Kernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
