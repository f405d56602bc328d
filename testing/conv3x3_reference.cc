#include "testing/conv3x3_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace diarization::testing {

std::vector<double> Conv3x3Nhwc(const std::vector<float>& x,
                                const std::vector<float>& oihw,
                                const std::vector<float>& bias,
                                const std::vector<float>* residual, bool relu,
                                int n, int h, int w, int c,
                                std::vector<double>* scale) {
  const size_t total = size_t(n) * h * w * c;
  std::vector<double> y(total);
  if (scale != nullptr) scale->assign(total, 0.0);
  std::vector<double> acc(c), mag(c);
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < h; ++i)
      for (int l = 0; l < w; ++l) {
        for (int k = 0; k < c; ++k) {
          acc[k] = bias[k];
          mag[k] = std::abs(double(bias[k]));
        }
        for (int dy = 0; dy < 3; ++dy)
          for (int dx = 0; dx < 3; ++dx) {
            const int ii = i + dy - 1, ll = l + dx - 1;
            if (ii < 0 || ii >= h || ll < 0 || ll >= w) continue;
            const float* xp = &x[((size_t(b) * h + ii) * w + ll) * c];
            for (int k = 0; k < c; ++k) {
              const float* wp = &oihw[size_t(k) * c * 9 + dy * 3 + dx];
              double s = 0, m = 0;
              for (int j = 0; j < c; ++j) {
                const double p = double(wp[size_t(j) * 9]) * xp[j];
                s += p;
                m += std::abs(p);
              }
              acc[k] += s;
              mag[k] += m;
            }
          }
        const size_t o = ((size_t(b) * h + i) * w + l) * c;
        for (int k = 0; k < c; ++k) {
          if (residual != nullptr) {
            acc[k] += (*residual)[o + k];
            mag[k] += std::abs(double((*residual)[o + k]));
          }
          y[o + k] = relu ? std::max(acc[k], 0.0) : acc[k];
          if (scale != nullptr) (*scale)[o + k] = mag[k];
        }
      }
  return y;
}

}  // namespace diarization::testing
