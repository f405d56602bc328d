#include "testing/sinc_conv_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace diarization::testing {

std::vector<double> SincConvAbsPoolReference(std::span<const float> x,
                                             std::span<const float> filters,
                                             int b, int len, int channels,
                                             int taps, int stride) {
  const int pooled = ((len - taps) / stride + 1) / 3;
  std::vector<double> out(static_cast<size_t>(channels) * pooled);
  for (int c = 0; c < channels; ++c) {
    const float* f = &filters[static_cast<size_t>(c) * taps];
    for (int p = 0; p < pooled; ++p) {
      double m = 0;
      for (int t = 3 * p; t < 3 * p + 3; ++t) {
        const float* xs =
            &x[static_cast<size_t>(b) * len + static_cast<size_t>(t) * stride];
        double acc = 0;
        for (int j = 0; j < taps; ++j) acc += double(f[j]) * xs[j];
        m = std::max(m, std::abs(acc));
      }
      out[static_cast<size_t>(c) * pooled + p] = m;
    }
  }
  return out;
}

void MakeSymmetricHalves(std::span<float> filters, int channels, int taps) {
  for (int c = 0; c < channels; ++c) {
    float* f = &filters[static_cast<size_t>(c) * taps];
    const bool odd = c >= channels / 2;
    for (int j = 0; j < taps / 2; ++j) f[taps - 1 - j] = odd ? -f[j] : f[j];
    if (odd && taps % 2 == 1) f[taps / 2] = 0.0f;
  }
}

}  // namespace diarization::testing
