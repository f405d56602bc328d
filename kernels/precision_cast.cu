#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "kernels/precision_cast.h"

namespace diarization::kernels {
namespace {

__global__ void FloatToHalfKernel(const float* __restrict__ in,
                                  __half* __restrict__ out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = __float2half_rn(in[i]);
  }
}

__global__ void HalfToFloatKernel(const __half* __restrict__ in,
                                  float* __restrict__ out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = __half2float(in[i]);
  }
}

dim3 Grid(int64_t count, int threads) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;  // grid-stride loop beyond
  return dim3(static_cast<unsigned>(blocks < 1 ? 1 : blocks));
}

absl::Status Check(int64_t count, const void* in, const void* out,
                   const char* name) {
  if (count < 0 || (count > 0 && (in == nullptr || out == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": count ", count, " or a null pointer"));
  }
  return absl::OkStatus();
}

absl::Status LastError(const char* name) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat(name, " launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchFloatToHalf(const float* in, void* out, int64_t count,
                               cudaStream_t stream) {
  if (absl::Status s = Check(count, in, out, "LaunchFloatToHalf"); !s.ok())
    return s;
  if (count == 0) return absl::OkStatus();
  constexpr int kThreads = 256;
  FloatToHalfKernel<<<Grid(count, kThreads), kThreads, 0, stream>>>(
      in, static_cast<__half*>(out), count);
  return LastError("FloatToHalfKernel");
}

absl::Status LaunchHalfToFloat(const void* in, float* out, int64_t count,
                               cudaStream_t stream) {
  if (absl::Status s = Check(count, in, out, "LaunchHalfToFloat"); !s.ok())
    return s;
  if (count == 0) return absl::OkStatus();
  constexpr int kThreads = 256;
  HalfToFloatKernel<<<Grid(count, kThreads), kThreads, 0, stream>>>(
      static_cast<const __half*>(in), out, count);
  return LastError("HalfToFloatKernel");
}

}  // namespace diarization::kernels
