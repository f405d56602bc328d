// LaunchConv3x3C32Tf32 against float64 host convolutions on fresh random
// inputs (GPU only), for every tile shape: small and odd shapes (every
// padding edge, partial tiles in both directions), the real layer1 shape
// (80 × 998), with and without residual and ReLU.
//
// Two references: the exact convolution (the kernel must be within the TF32
// class, ≤ 1e-3 relative) and the convolution of the TF32-rounded inputs and
// weights in float64 (the kernel must match it to float32 accumulation
// error: a wrong channel order, tap, rounding mode or tile edge is orders of
// magnitude above that bound).
#include "kernels/conv3x3_c32.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/conv3x3_c32_tiles_env.h"
#include "testing/conv3x3_reference.h"
#include "testing/cuda_test_buffers.h"

namespace diarization::kernels {
namespace {

using ::diarization::testing::Rng;
using Dev = ::diarization::testing::DeviceFloats;

constexpr int kC = kConv3x3C32Channels;

// The forms to run (conv3x3_c32_tiles_env.h); a bad selection fails the
// test rather than running nothing.
std::vector<Conv3x3C32Tile> TilesToRun() {
  const absl::StatusOr<std::vector<Conv3x3C32Tile>> tiles =
      Conv3x3C32TilesFromEnv();
  EXPECT_TRUE(tiles.ok()) << tiles.status();
  return tiles.ok() ? *tiles : std::vector<Conv3x3C32Tile>{};
}

struct Reference {
  std::vector<double> exact;  // float64 of the float inputs
  std::vector<double> tf32;   // float64 of the TF32-rounded x and weights
  std::vector<double> scale;  // Σ|w·x| + |bias| + |residual| per output
};

// x, residual NHWC; oihw PyTorch's weight layout.
Reference Convolve(const std::vector<float>& x, const std::vector<float>& oihw,
                   const std::vector<float>& bias,
                   const std::vector<float>* residual, bool relu, int n, int h,
                   int w) {
  Reference r;
  r.exact = ::diarization::testing::Conv3x3Nhwc(x, oihw, bias, residual, relu,
                                                n, h, w, kC, &r.scale);
  std::vector<float> xr(x.size()), wr(oihw.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = RoundToTf32(x[i]);
  for (size_t i = 0; i < oihw.size(); ++i) wr[i] = RoundToTf32(oihw[i]);
  r.tf32 = ::diarization::testing::Conv3x3Nhwc(xr, wr, bias, residual, relu, n,
                                               h, w, kC);
  return r;
}

struct Errors {
  double rel_exact = 0, rel_tf32 = 0, worst_bound_ratio = 0;
  size_t not_finite = 0;
};

Errors Compare(const std::vector<float>& y, const Reference& r) {
  Errors e;
  double d_exact = 0, d_tf32 = 0, n_exact = 0, n_tf32 = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      ++e.not_finite;
      continue;
    }
    d_exact += (y[i] - r.exact[i]) * (y[i] - r.exact[i]);
    n_exact += r.exact[i] * r.exact[i];
    d_tf32 += (y[i] - r.tf32[i]) * (y[i] - r.tf32[i]);
    n_tf32 += r.tf32[i] * r.tf32[i];
    // Float32 accumulation of at most 290 terms: far below 1e-5 of the
    // terms' magnitude.
    const double bound = 1e-5 * r.scale[i] + 1e-30;
    e.worst_bound_ratio =
        std::max(e.worst_bound_ratio, std::abs(y[i] - r.tf32[i]) / bound);
  }
  e.rel_exact = std::sqrt(d_exact / std::max(n_exact, 1e-300));
  e.rel_tf32 = std::sqrt(d_tf32 / std::max(n_tf32, 1e-300));
  return e;
}

TEST(Conv3x3C32Test, EveryTileMatchesFloat64ReferencesOnRandomInputs) {
  std::mt19937& rng = Rng();
  struct Shape {
    int n, h, w;
    bool residual, relu;
  };
  // Odd sizes: partial tiles in rows (h % 8, h % 4, h % 2) and columns
  // (w % 64, w % 32), 1-pixel images, and the layer1 shape.
  std::uniform_int_distribution<int> small_h(1, 19), small_w(1, 150);
  std::vector<Shape> shapes = {{1, 1, 1, false, true},
                               {2, 3, 5, true, true},
                               {1, small_h(rng), small_w(rng), true, false},
                               {3, small_h(rng), small_w(rng), false, false},
                               {2, small_h(rng), small_w(rng), true, true},
                               {1, 80, 998, false, true},
                               {1, 80, 998, true, true}};
  for (const Shape& s : shapes) {
    // Activation-like inputs (ReLU outputs: ≥ 0, some zeros) and weights of
    // the trunk's scale; a residual of the same scale.
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    const size_t total = size_t(s.n) * s.h * s.w * kC;
    std::vector<float> x(total), wts(kC * kC * 9), bias(kC), res;
    for (float& v : x) v = std::max(0.0f, gauss(rng));
    for (float& v : wts) v = 0.08f * gauss(rng);
    for (float& v : bias) v = 0.3f * gauss(rng);
    if (s.residual) {
      res.resize(total);
      for (float& v : res) v = std::max(0.0f, gauss(rng));
    }
    const Reference ref = Convolve(x, wts, bias, s.residual ? &res : nullptr,
                                   s.relu, s.n, s.h, s.w);
    Dev d_x(x), d_b(bias), d_y(total);
    std::vector<float> res_host = s.residual ? res : std::vector<float>{0.0f};
    Dev d_r(res_host);
    for (Conv3x3C32Tile tile : TilesToRun()) {
      auto packed = PackConv3x3C32Weights(wts, tile);
      ASSERT_TRUE(packed.ok()) << packed.status();
      Dev d_w(*packed);
      d_y.Poison();
      const absl::Status st =
          LaunchConv3x3C32Tf32({.x = d_x.p,
                                .packed_weights = d_w.p,
                                .bias = d_b.p,
                                .residual = s.residual ? d_r.p : nullptr,
                                .y = d_y.p,
                                .n = s.n,
                                .h = s.h,
                                .w = s.w,
                                .relu = s.relu,
                                .tile = tile},
                               nullptr);
      ASSERT_TRUE(st.ok()) << st;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const Errors e = Compare(d_y.Host(), ref);
      std::printf(
          "conv3x3_c32 %s n %d h %d w %d residual %d relu %d: relative %.3g "
          "(exact), %.3g (tf32-rounded inputs), worst / bound %.3g\n",
          Conv3x3C32TileName(tile).c_str(), s.n, s.h, s.w, s.residual, s.relu,
          e.rel_exact, e.rel_tf32, e.worst_bound_ratio);
      EXPECT_EQ(e.not_finite, 0u) << "unwritten or non-finite outputs";
      EXPECT_LT(e.rel_exact, 1e-3);
      EXPECT_LT(e.rel_tf32, 1e-6);
      EXPECT_LT(e.worst_bound_ratio, 1.0);
    }
  }
}

TEST(Conv3x3C32Test, RoundToTf32RoundsToNearestTiesAway) {
  // 1 + 2^-11 is half a TF32 ulp above 1: ties away from zero → 1 + 2^-10.
  EXPECT_EQ(RoundToTf32(1.0f + std::ldexp(1.0f, -11)),
            1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(RoundToTf32(-(1.0f + std::ldexp(1.0f, -11))),
            -(1.0f + std::ldexp(1.0f, -10)));
  EXPECT_EQ(RoundToTf32(1.0f + std::ldexp(1.0f, -12)), 1.0f);
  EXPECT_EQ(RoundToTf32(0.0f), 0.0f);
}

TEST(Conv3x3C32Test, RefusesBadArguments) {
  EXPECT_FALSE(PackConv3x3C32Weights(std::vector<float>(100)).ok());
  Dev a(size_t{4 * 4 * kC}), b(size_t{4 * 4 * kC});
  Dev wts(size_t{kConv3x3C32PackedFloats}), bias(size_t{kC});
  const Conv3x3C32Params good{.x = a.p,
                              .packed_weights = wts.p,
                              .bias = bias.p,
                              .y = b.p,
                              .n = 1,
                              .h = 4,
                              .w = 4};
  Conv3x3C32Params p = good;
  p.y = a.p;  // in place
  EXPECT_FALSE(LaunchConv3x3C32Tf32(p, nullptr).ok());
  p = good;
  p.residual = b.p;  // the residual is the output
  EXPECT_FALSE(LaunchConv3x3C32Tf32(p, nullptr).ok());
  p = good;
  p.x = a.p + 1;  // misaligned
  EXPECT_FALSE(LaunchConv3x3C32Tf32(p, nullptr).ok());
  p = good;
  p.h = 0;
  EXPECT_FALSE(LaunchConv3x3C32Tf32(p, nullptr).ok());
  p = good;
  p.bias = nullptr;
  EXPECT_FALSE(LaunchConv3x3C32Tf32(p, nullptr).ok());
}

}  // namespace
}  // namespace diarization::kernels
