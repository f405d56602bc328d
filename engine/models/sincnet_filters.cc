#include "engine/models/sincnet_filters.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/common/shapes.h"

namespace diarization::models {
namespace {
constexpr float kMinLowHz = PyanNetHyperParameters::kSincMinLowHz;
constexpr float kMinBandHz = PyanNetHyperParameters::kSincMinBandHz;
constexpr float kNyquistHz = kSampleRateHz / 2.0f;
}  // namespace

absl::StatusOr<std::vector<float>> ComputeSincFilters(
    std::span<const float> low_hz, std::span<const float> band_hz,
    std::span<const float> window, std::span<const float> n) {
  if (low_hz.size() != kSincBands || band_hz.size() != kSincBands ||
      window.size() != kSincHalfKernel || n.size() != kSincHalfKernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SincNet filter parameters must be 40 low_hz_, 40 band_hz_, 125 "
        "window_, 125 n_; got ",
        low_hz.size(), ", ", band_hz.size(), ", ", window.size(), ", ",
        n.size()));
  }
  std::vector<float> filters(kSincFilters * kSincKernel);
  for (int k = 0; k < kSincBands; ++k) {
    // asteroid: low = min_low + |low_hz_|; high = clamp(low + min_band +
    // |band_hz_|, min_low, fs/2); band = high - low (float32 tensors).
    const float low = kMinLowHz + std::abs(low_hz[k]);
    const float high = std::clamp(low + kMinBandHz + std::abs(band_hz[k]),
                                  kMinLowHz, kNyquistHz);
    const float band = high - low;
    if (!(band > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("SincNet band ", k, " has zero width (low ", low,
                       " Hz, high ", high, " Hz)"));
    }
    const float center = 2.0f * band;  // bp_center of the cosine filter
    const float norm = 2.0f * band;    // band_pass / (2 * band)
    float* cos_f = filters.data() + k * kSincKernel;
    float* sin_f = filters.data() + (kSincBands + k) * kSincKernel;
    for (int j = 0; j < kSincHalfKernel; ++j) {
      // ft_low = low · n_ and ft_high = high · n_ (a (40,1)x(1,125) matmul:
      // one product each, no accumulation).
      const float ft_low = low * n[j];
      const float ft_high = high * n[j];
      const float half_n = n[j] / 2.0f;
      const float cos_left =
          ((std::sin(ft_high) - std::sin(ft_low)) / half_n) * window[j];
      const float sin_left =
          ((std::cos(ft_low) - std::cos(ft_high)) / half_n) * window[j];
      cos_f[j] = cos_left / norm;
      cos_f[kSincKernel - 1 - j] = cos_left / norm;
      sin_f[j] = sin_left / norm;
      sin_f[kSincKernel - 1 - j] = -sin_left / norm;
    }
    cos_f[kSincHalfKernel] = center / norm;
    sin_f[kSincHalfKernel] = 0.0f / norm;
  }
  return filters;
}

}  // namespace diarization::models
