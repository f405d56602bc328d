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
#include "testing/cuda_test_buffers.h"

namespace diarization::kernels {
namespace {

constexpr int kCo = kConv1dPoolOutChannels;
constexpr int kK = kConv1dPoolTaps;

TEST(Conv1dPoolTest, MatchesFloat64ReferenceOnRandomInputs) {
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
    const testing::Conv1dPoolCase c =
        testing::MakeConv1dPoolCase(s.batch, s.c_in, s.len, testing::Rng());
    testing::DeviceFloats x(c.x), w(Conv1dPoolWeights(c.weights, s.c_in)),
        bias(c.bias);
    testing::DeviceFloats y(c.want.y.size());  // poisoned: NaN
    ASSERT_TRUE(LaunchConv1dMaxPool3({.x = x.p,
                                      .weights = w.p,
                                      .bias = bias.p,
                                      .y = y.p,
                                      .batch = s.batch,
                                      .in_channels = s.c_in,
                                      .len = s.len},
                                     nullptr)
                    .ok());
    const double max_rel = testing::ExpectConv1dPoolMatches(y.Host(), c);
    std::printf(
        "conv1d pool %d x %d x %d: max |gpu - float64| / sum|terms| = %.3g\n",
        s.batch, s.c_in, s.len, max_rel);
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
