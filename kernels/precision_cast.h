// Element-wise casts between float32 and IEEE half on the device, at the
// two ends of the embedding trunk in the "mixed" precision (the fbank's
// float output into the FP16 convolutions, the trunk's FP16 output into the
// float statistics pooling). Round to nearest even; values beyond the half
// range become ±inf, which the callers' parity gate would catch.
#ifndef DIARIZATION_KERNELS_PRECISION_CAST_H_
#define DIARIZATION_KERNELS_PRECISION_CAST_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace diarization::kernels {

// out (__half, count) = in (float, count).
absl::Status LaunchFloatToHalf(const float* in, void* out, int64_t count,
                               cudaStream_t stream);
// out (float, count) = in (__half, count).
absl::Status LaunchHalfToFloat(const void* in, float* out, int64_t count,
                               cudaStream_t stream);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_PRECISION_CAST_H_
