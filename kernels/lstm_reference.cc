#include "kernels/lstm_reference.h"

#include <cmath>

namespace diarization::kernels {
namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

std::vector<double> LstmRecurrenceReference(const float* gates_in,
                                            const float* w_hh, int64_t window,
                                            int steps) {
  constexpr int g = kLstmReferenceGates, hd = kLstmReferenceHidden;
  std::vector<double> out(static_cast<size_t>(steps) * 2 * hd);
  for (int d = 0; d < 2; ++d) {
    std::vector<double> h(hd, 0.0), c(hd, 0.0), z(g);
    const float* w = w_hh + static_cast<size_t>(d) * g * hd;
    for (int s = 0; s < steps; ++s) {
      const int t = d == 0 ? s : steps - 1 - s;
      const float* in =
          gates_in + (static_cast<size_t>(window) * steps + t) * 2 * g + d * g;
      for (int j = 0; j < g; ++j) {
        double acc = in[j];
        for (int k = 0; k < hd; ++k)
          acc += static_cast<double>(w[static_cast<size_t>(j) * hd + k]) * h[k];
        z[j] = acc;
      }
      for (int u = 0; u < hd; ++u) {
        const double i = Sigmoid(z[u]), f = Sigmoid(z[hd + u]);
        const double gg = std::tanh(z[2 * hd + u]), o = Sigmoid(z[3 * hd + u]);
        c[u] = f * c[u] + i * gg;
        h[u] = o * std::tanh(c[u]);
        out[static_cast<size_t>(t) * 2 * hd + d * hd + u] = h[u];
      }
    }
  }
  return out;
}

std::vector<float> TransposeWhh(const std::vector<float>& w_hh) {
  constexpr int g = kLstmReferenceGates, hd = kLstmReferenceHidden;
  std::vector<float> t(w_hh.size());
  for (int d = 0; d < 2; ++d)
    for (int j = 0; j < g; ++j)
      for (int k = 0; k < hd; ++k)
        t[(static_cast<size_t>(d) * hd + k) * g + j] =
            w_hh[(static_cast<size_t>(d) * g + j) * hd + k];
  return t;
}

}  // namespace diarization::kernels
