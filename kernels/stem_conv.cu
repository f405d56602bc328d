#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/stem_conv.h"
#include "kernels/stem_conv_kernel.inc"

namespace diarization::kernels {
namespace {

using stem_conv_internal::kQuads;
using stem_conv_internal::kThreads;
using stem_conv_internal::StemConvKernel;
static_assert(stem_conv_internal::kC == kStemConvChannels);

}  // namespace

absl::Status LaunchStemConv3x3Relu(const StemConvParams& p,
                                   cudaStream_t stream) {
  if (p.x == nullptr || p.weights == nullptr || p.bias == nullptr ||
      p.y == nullptr || p.n <= 0 || p.h <= 0 || p.w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchStemConv3x3Relu: null pointer or size n ", p.n,
                     " h ", p.h, " w ", p.w));
  }
  if (reinterpret_cast<uintptr_t>(p.y) % 16 != 0) {
    return absl::InvalidArgumentError(
        "LaunchStemConv3x3Relu: y must be 16-byte aligned (float4 stores)");
  }
  const int64_t total = int64_t{p.n} * p.h * p.w * kQuads;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchStemConv3x3Relu: ", total, " threads exceed one grid"));
  }
  StemConvKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p.x, p.weights, p.bias, reinterpret_cast<float4*>(p.y), p.h, p.w, total);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("StemConvKernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
