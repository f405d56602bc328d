#include "testing/comparisons.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace diarization::testing {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return kInf;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return kInf;
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  }
  return worst;
}

double MaxRowRelativeDiff(const std::vector<float>& a,
                          const std::vector<float>& b, int dim) {
  if (a.size() != b.size() || dim < 1 || a.size() % dim != 0) return kInf;
  double worst = 0.0;
  for (size_t r = 0; r * dim < a.size(); ++r) {
    double num = 0.0, den = 0.0;
    for (int i = 0; i < dim; ++i) {
      const double d = double(a[r * dim + i]) - double(b[r * dim + i]);
      if (!std::isfinite(d)) return kInf;
      num += d * d;
      den += double(b[r * dim + i]) * double(b[r * dim + i]);
    }
    worst = std::max(worst, std::sqrt(num / std::max(den, 1e-30)));
  }
  return worst;
}

int DecisionFlips(const std::vector<float>& got, const std::vector<float>& ref,
                  int classes, double margin) {
  int flips = 0;
  for (size_t f = 0; (f + 1) * classes <= std::min(got.size(), ref.size());
       ++f) {
    const float* r = &ref[f * classes];
    const float* g = &got[f * classes];
    const int rb = int(std::max_element(r, r + classes) - r);
    const int gb = int(std::max_element(g, g + classes) - g);
    float second = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < classes; ++c) {
      if (c != rb) second = std::max(second, r[c]);
    }
    if (rb != gb && r[rb] - second > margin) ++flips;
  }
  return flips;
}

}  // namespace diarization::testing
