#include "testing/stats_pool_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace diarization::testing {

std::vector<double> StatsPoolReference(const std::vector<float>& x,
                                       const std::vector<float>& m, int batch,
                                       int masks, int feat, int time,
                                       int frames) {
  std::vector<double> ref(size_t(batch) * masks * 2 * feat);
  for (int b = 0; b < batch; ++b) {
    for (int s = 0; s < masks; ++s) {
      std::vector<double> w(time);
      for (int j = 0; j < time; ++j) {
        // torch nearest: floor(j * fl32(589/125)) in float32.
        const float scale = float(frames) / float(time);
        int idx = int(std::floor(float(j) * scale));
        w[j] = m[(size_t(b) * masks + s) * frames + std::min(idx, frames - 1)];
      }
      // v1 = Σw + 1e-8 in float32, as torch computes it (for one active
      // frame v1 rounds to exactly 1, so mean = x and var = 0: models.md §4).
      double sw = 0, v2 = 0;
      for (double v : w) {
        sw += v;
        v2 += v * v;
      }
      const double v1 = double(float(sw) + 1e-8f);
      for (int f = 0; f < feat; ++f) {
        const float* xf = &x[(size_t(b) * feat + f) * time];
        double mean = 0;
        for (int j = 0; j < time; ++j) mean += w[j] * xf[j];
        mean /= v1;
        double var = 0;
        for (int j = 0; j < time; ++j)
          var += w[j] * (xf[j] - mean) * (xf[j] - mean);
        // The float32 denominators of torch: v1 - v2/v1 + 1e-8.
        const float v1f = float(v1);
        const float denom = (v1f - float(v2) / v1f) + 1e-8f;
        var /= denom;
        ref[(size_t(b) * masks + s) * 2 * feat + f] = mean;
        ref[(size_t(b) * masks + s) * 2 * feat + feat + f] = std::sqrt(var);
      }
    }
  }
  return ref;
}

std::vector<float> ToChannelsLast(const std::vector<float>& x, int batch,
                                  int feat, int time, int rows) {
  const int channels = feat / rows;
  std::vector<float> xcl(x.size());
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < channels; ++c)
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < time; ++j)
          xcl[((size_t(b) * rows + r) * time + j) * channels + c] =
              x[(size_t(b) * feat + c * rows + r) * time + j];
  return xcl;
}

}  // namespace diarization::testing
