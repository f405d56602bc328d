// The float64 LSTM reference against facts that do not depend on it: with
// W_hh = 0 each step is a closed-form cell update, and the reverse direction
// is the forward direction on time-reversed inputs.
#include "kernels/lstm_reference.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

constexpr int kH = kLstmReferenceHidden, kG = kLstmReferenceGates;

std::vector<float> Random(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double Sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(LstmReferenceTest, ZeroRecurrentWeightsIsTheCellUpdate) {
  std::mt19937 rng(std::random_device{}());
  const int steps = 5, batch = 2;
  auto gates = Random(size_t(batch) * steps * 2 * kG, -2.0f, 2.0f, rng);
  std::vector<float> w(size_t(2) * kG * kH, 0.0f);
  const auto out = LstmRecurrenceReference(gates.data(), w.data(), 1, steps);
  for (int d = 0; d < 2; ++d) {
    for (int u = 0; u < kH; u += 17) {
      double c = 0;
      for (int s = 0; s < steps; ++s) {
        const int t = d == 0 ? s : steps - 1 - s;
        const float* zf = &gates[(size_t(1) * steps + t) * 2 * kG + d * kG];
        auto z = [&](int j) { return double(zf[j]); };
        c = Sig(z(kH + u)) * c + Sig(z(u)) * std::tanh(z(2 * kH + u));
        const double h = Sig(z(3 * kH + u)) * std::tanh(c);
        EXPECT_NEAR(out[size_t(t) * 2 * kH + d * kH + u], h, 1e-15);
      }
    }
  }
}

TEST(LstmReferenceTest, ReverseIsForwardOnReversedTime) {
  std::mt19937 rng(std::random_device{}());
  const int steps = 9;
  const float k = 1.0f / std::sqrt(float(kH));
  auto w1 = Random(size_t(kG) * kH, -k, k, rng);
  std::vector<float> w(w1);
  w.insert(w.end(), w1.begin(), w1.end());  // both directions the same
  auto gates = Random(size_t(steps) * 2 * kG, -1.0f, 1.0f, rng);
  // rev's reverse-direction inputs are gates' forward inputs, time-reversed.
  auto rev = Random(gates.size(), -1.0f, 1.0f, rng);
  for (int t = 0; t < steps; ++t)
    for (int j = 0; j < kG; ++j)
      rev[size_t(steps - 1 - t) * 2 * kG + kG + j] =
          gates[size_t(t) * 2 * kG + j];
  const auto a = LstmRecurrenceReference(gates.data(), w.data(), 0, steps);
  const auto b = LstmRecurrenceReference(rev.data(), w.data(), 0, steps);
  double moved = 0;
  for (int t = 0; t < steps; ++t)
    for (int u = 0; u < kH; ++u) {
      // Forward of `gates` at t == reverse of `rev` at steps-1-t.
      EXPECT_EQ(a[size_t(t) * 2 * kH + u],
                b[size_t(steps - 1 - t) * 2 * kH + kH + u]);
      moved = std::max(moved, std::abs(a[size_t(t) * 2 * kH + u]));
    }
  EXPECT_GT(moved, 0.05);  // not all zero
}

TEST(LstmReferenceTest, TransposeWhh) {
  std::mt19937 rng(std::random_device{}());
  auto w = Random(size_t(2) * kG * kH, -1.0f, 1.0f, rng);
  const auto t = TransposeWhh(w);
  EXPECT_EQ(t[(size_t(1) * kH + 5) * kG + 300],
            w[(size_t(1) * kG + 300) * kH + 5]);
  EXPECT_EQ(t[size_t(7) * kG + 2], w[size_t(2) * kH + 7]);
}

}  // namespace
}  // namespace diarization::kernels
