// LaunchStemConv3x3Relu against a float64 host convolution on fresh random
// inputs (GPU only): small and odd shapes (every padding edge), the real
// stem shape (80 × 998), negative pre-activations (ReLU), and the argument
// checks.
#include "kernels/stem_conv.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

constexpr int kC = kStemConvChannels;

float* ToDevice(const std::vector<float>& h) {
  float* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), h.size() * sizeof(float)),
            cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  return p;
}

// float64 reference, NHWC output.
std::vector<double> Reference(const std::vector<float>& x,
                              const std::vector<float>& wt,
                              const std::vector<float>& b, int n, int h,
                              int w) {
  std::vector<double> y(size_t(n) * h * w * kC);
  for (int bb = 0; bb < n; ++bb)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j)
        for (int k = 0; k < kC; ++k) {
          double acc = b[k];
          for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx) {
              const int ii = i + dy - 1, jj = j + dx - 1;
              if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
              acc += double(wt[k * 9 + dy * 3 + dx]) *
                     x[(size_t(bb) * h + ii) * w + jj];
            }
          y[((size_t(bb) * h + i) * w + j) * kC + k] = std::max(acc, 0.0);
        }
  return y;
}

TEST(StemConvTest, MatchesFloat64ReferenceOnRandomInputs) {
  std::mt19937 rng(std::random_device{}());
  struct Shape {
    int n, h, w;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{2, 1, 7}, Shape{3, 5, 1},
                        Shape{3, 7, 13}, Shape{2, 80, 998}}) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(size_t(s.n) * s.h * s.w), wt(kC * 9), b(kC);
    for (float& v : x) v = g(rng);
    for (float& v : wt) v = 0.5f * g(rng);
    for (float& v : b) v = 0.3f * g(rng);
    float* dx = ToDevice(x);
    float* dw = ToDevice(wt);
    float* db = ToDevice(b);
    float* dy = nullptr;
    const size_t ny = size_t(s.n) * s.h * s.w * kC;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dy), ny * sizeof(float)),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(dy, 0xff, ny * sizeof(float)), cudaSuccess);  // NaN
    ASSERT_TRUE(LaunchStemConv3x3Relu({.x = dx,
                                       .weights = dw,
                                       .bias = db,
                                       .y = dy,
                                       .n = s.n,
                                       .h = s.h,
                                       .w = s.w},
                                      nullptr)
                    .ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(ny);
    ASSERT_EQ(
        cudaMemcpy(got.data(), dy, ny * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
    const std::vector<double> want = Reference(x, wt, b, s.n, s.h, s.w);
    double max_err = 0;
    int zeros = 0;
    for (size_t i = 0; i < ny; ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << i;
      // Nine float products and sums: a few float roundings of the inputs'
      // scale.
      const double err = std::abs(got[i] - want[i]);
      max_err = std::max(max_err, err);
      ASSERT_LE(err, 1e-5 * (1.0 + std::abs(want[i]))) << i;
      zeros += got[i] == 0.0f;
    }
    // Random signs: ReLU must have cut some, and not all.
    if (ny >= 64) {
      EXPECT_GT(zeros, 0);
      EXPECT_LT(zeros, static_cast<int>(ny));
    }
    std::printf("stem conv %dx%dx%d: max |gpu - float64| = %.3g\n", s.n, s.h,
                s.w, max_err);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dy);
  }
}

TEST(StemConvTest, RejectsBadArguments) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), 4096), cudaSuccess);
  StemConvParams ok{
      .x = p, .weights = p, .bias = p, .y = p, .n = 1, .h = 2, .w = 2};
  StemConvParams bad = ok;
  bad.x = nullptr;
  EXPECT_EQ(LaunchStemConv3x3Relu(bad, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  bad = ok;
  bad.h = 0;
  EXPECT_EQ(LaunchStemConv3x3Relu(bad, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  bad = ok;
  bad.y = p + 1;  // 4-byte offset: float4 stores need 16
  EXPECT_EQ(LaunchStemConv3x3Relu(bad, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  cudaFree(p);
}

}  // namespace
}  // namespace diarization::kernels
