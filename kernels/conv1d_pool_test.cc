// LaunchConv1dMaxPool3 against a float64 host convolution, max-pool and
// bias on fresh random inputs (GPU only): tiny and odd shapes (one pooled
// output, a channel count that leaves a partial shared-memory chunk, a last
// block with a few pooled outputs, an exact multiple of a block), the
// segmentation's two real shapes at batch 3, and the argument checks.
#include "kernels/conv1d_pool.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "testing/conv1d_pool_reference.h"

namespace diarization::kernels {
namespace {

constexpr int kCo = kConv1dPoolOutChannels;
constexpr int kK = kConv1dPoolTaps;

float* ToDevice(const std::vector<float>& h) {
  float* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), h.size() * sizeof(float)),
            cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  return p;
}

TEST(Conv1dPoolTest, MatchesFloat64ReferenceOnRandomInputs) {
  std::mt19937 rng(std::random_device{}());
  struct Shape {
    int batch, c_in, len;
  };
  // len 7: one pooled output. 17 channels: one full chunk of 16 and one
  // channel. 200 + 4 samples: 66 pooled = one block of 64 and 2. 196:
  // exactly 64 pooled. The real shapes: 80 x 5325 (1773 pooled, 27 blocks
  // and 45) and 60 x 1773 (589 pooled; chunks of 16, 16, 16, 12).
  for (const Shape s :
       {Shape{1, 1, 7}, Shape{2, 3, 20}, Shape{3, 17, 204}, Shape{2, 5, 196},
        Shape{3, 80, 5325}, Shape{3, 60, 1773}}) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(size_t(s.batch) * s.c_in * s.len),
        w(size_t(kCo) * s.c_in * kK), bias(kCo);
    for (float& v : x) v = g(rng);
    const float w_scale = 1.0f / std::sqrt(float(s.c_in * kK));
    for (float& v : w) v = w_scale * g(rng);
    for (float& v : bias) v = 0.3f * g(rng);
    const int pooled = Conv1dPoolLength(s.len);
    const size_t ny = size_t(s.batch) * kCo * pooled;
    float* dx = ToDevice(x);
    float* dw = ToDevice(Conv1dPoolWeights(w, s.c_in));
    float* db = ToDevice(bias);
    float* dy = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dy), ny * sizeof(float)),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(dy, 0xff, ny * sizeof(float)), cudaSuccess);  // NaN
    ASSERT_TRUE(LaunchConv1dMaxPool3({.x = dx,
                                      .weights = dw,
                                      .bias = db,
                                      .y = dy,
                                      .batch = s.batch,
                                      .in_channels = s.c_in,
                                      .len = s.len},
                                     nullptr)
                    .ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(ny);
    ASSERT_EQ(
        cudaMemcpy(got.data(), dy, ny * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
    const testing::Conv1dPoolReference want = testing::Conv1dMaxPool3Reference(
        x, w, bias, s.batch, s.c_in, kCo, s.len, kK);
    double max_rel = 0;
    for (size_t i = 0; i < ny; ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "output " << i << " not written";
      // A float32 FMA chain of c_in x 5 terms: its error is bounded by
      // n·2⁻²⁴ of the terms' absolute sum; the max and the bias add one
      // rounding of the result. A wrong index costs the terms' own size.
      const double err = std::abs(got[i] - want.y[i]);
      const double bound =
          s.c_in * kK * 6e-8 * want.scale[i] + 1e-7 * std::abs(want.y[i]);
      ASSERT_LE(err, bound) << "output " << i << " of " << ny << ": got "
                            << got[i] << ", want " << want.y[i];
      max_rel = std::max(max_rel, err / (want.scale[i] + 1e-30));
    }
    std::printf(
        "conv1d pool %d x %d x %d: max |gpu - float64| / sum|terms| "
        "= %.3g\n",
        s.batch, s.c_in, s.len, max_rel);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dy);
  }
}

TEST(Conv1dPoolTest, RejectsBadArguments) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), 4096), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, 0, 4096), cudaSuccess);  // initcheck-clean
  const Conv1dPoolParams ok{.x = p,
                            .weights = p,
                            .bias = p,
                            .y = p + 512,
                            .batch = 1,
                            .in_channels = 1,
                            .len = 7};
  std::vector<Conv1dPoolParams> bad(7, ok);
  bad[0].x = nullptr;
  bad[1].weights = nullptr;
  bad[2].bias = nullptr;
  bad[3].y = nullptr;
  bad[4].batch = 0;
  bad[5].in_channels = kConv1dPoolMaxInChannels + 1;
  bad[6].len = 6;  // no pooled output
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(LaunchConv1dMaxPool3(bad[i], nullptr).code(),
              absl::StatusCode::kInvalidArgument)
        << "case " << i;
  }
  EXPECT_TRUE(LaunchConv1dMaxPool3(ok, nullptr).ok());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(p);
}

}  // namespace
}  // namespace diarization::kernels
