#include "testing/conv1d_pool_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace diarization::testing {

Conv1dPoolReference Conv1dMaxPool3Reference(std::span<const float> x,
                                            std::span<const float> weights,
                                            std::span<const float> bias,
                                            int batch, int in_channels,
                                            int out_channels, int len,
                                            int taps) {
  const int pooled = len >= taps ? (len - taps + 1) / 3 : 0;
  Conv1dPoolReference r;
  r.y.resize(size_t(batch) * out_channels * pooled);
  r.scale.resize(r.y.size());
  for (int b = 0; b < batch; ++b) {
    for (int o = 0; o < out_channels; ++o) {
      for (int p = 0; p < pooled; ++p) {
        double best = -std::numeric_limits<double>::infinity(), scale = 0;
        for (int r3 = 0; r3 < 3; ++r3) {
          const int t = 3 * p + r3;
          double acc = 0, abs_sum = 0;
          for (int c = 0; c < in_channels; ++c) {
            for (int k = 0; k < taps; ++k) {
              const double term =
                  double(weights[(size_t(o) * in_channels + c) * taps + k]) *
                  x[(size_t(b) * in_channels + c) * len + t + k];
              acc += term;
              abs_sum += std::abs(term);
            }
          }
          best = std::max(best, acc);
          scale = std::max(scale, abs_sum);
        }
        const size_t i = (size_t(b) * out_channels + o) * pooled + p;
        r.y[i] = best + bias[o];
        r.scale[i] = scale;
      }
    }
  }
  return r;
}

}  // namespace diarization::testing
