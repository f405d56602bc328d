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
#include "testing/cuda_test_buffers.h"
#include "testing/stem_conv_reference.h"

namespace diarization::kernels {
namespace {

static_assert(kStemConvChannels == 32);  // the float64 reference's

TEST(StemConvTest, MatchesFloat64ReferenceOnRandomInputs) {
  struct Shape {
    int n, h, w;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{2, 1, 7}, Shape{3, 5, 1},
                        Shape{3, 7, 13}, Shape{2, 80, 998}}) {
    const testing::StemConvCase c =
        testing::MakeStemConvCase(s.n, s.h, s.w, testing::Rng());
    testing::DeviceFloats x(c.x), wt(c.weights), b(c.bias);
    testing::DeviceFloats y(c.want.size());  // poisoned: NaN
    ASSERT_TRUE(LaunchStemConv3x3Relu({.x = x.p,
                                       .weights = wt.p,
                                       .bias = b.p,
                                       .y = y.p,
                                       .n = s.n,
                                       .h = s.h,
                                       .w = s.w},
                                      nullptr)
                    .ok());
    const double max_err = testing::ExpectStemConvMatches(y.Host(), c);
    std::printf("stem conv %dx%dx%d: max |gpu - float64| = %.3g\n", s.n, s.h,
                s.w, max_err);
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
