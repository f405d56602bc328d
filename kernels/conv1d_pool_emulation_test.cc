// The direct 1-D convolution + max-pool kernel's own source
// (conv1d_pool_kernel.inc) run on host threads (testing/
// cuda_host_emulation.h) against the float64 reference, on fresh random
// inputs of the shapes conv1d_pool_test runs on the GPU, smaller where a
// block's 192 host threads make it slow: its indexing, tiling, chunking and
// pooling are checked on every CI run. It cannot check speed, races or the
// GPU's arithmetic: conv1d_pool_test does that on the device.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/conv1d_pool.h"
#include "testing/conv1d_pool_reference.h"
// The emulation after CUDA's headers (conv1d_pool.h), the kernel's source
// after the emulation's macros.
// clang-format off
#include "testing/cuda_host_emulation.h"
#include "kernels/conv1d_pool_kernel.inc"
// clang-format on

namespace diarization::kernels {
namespace {

namespace k = conv1d_pool_internal;

// As LaunchConv1dMaxPool3 does (weights in the kernel's layout): pooled outputs
// in blocks of kTilePooled, one row of blocks per window.
std::vector<float> RunEmulated(const std::vector<float>& x,
                               const std::vector<float>& w,
                               const std::vector<float>& bias, int batch,
                               int c_in, int len) {
  const int pooled = (len - k::kTaps + 1) / 3;
  const int tiles = (pooled + k::kTilePooled - 1) / k::kTilePooled;
  std::vector<float> y(size_t(batch) * k::kCo * pooled, NAN);
  const std::vector<float> wt = Conv1dPoolWeights(w, c_in);
  testing::RunEmulatedGrid(batch * tiles, k::kThreads, [&] {
    k::Conv1dMaxPool3Kernel(x.data(), wt.data(), bias.data(), y.data(), c_in,
                            len, pooled, tiles);
  });
  return y;
}

TEST(Conv1dPoolEmulationTest, KernelSourceMatchesFloat64Reference) {
  std::mt19937 rng(std::random_device{}());
  struct Shape {
    int batch, c_in, len;
  };
  // One pooled output; a partial channel chunk (17 = 16 + 1) and a last
  // block of 2 pooled outputs (66); exactly one block (64); six blocks of 80
  // channels (332 pooled); the second real layer's shape, 60 x 1773 (589
  // pooled in ten blocks, chunks of 16, 16, 16, 12).
  for (const Shape s :
       {Shape{1, 1, 7}, Shape{2, 3, 20}, Shape{3, 17, 204}, Shape{2, 5, 196},
        Shape{1, 80, 1000}, Shape{1, 60, 1773}}) {
    const testing::Conv1dPoolCase c =
        testing::MakeConv1dPoolCase(s.batch, s.c_in, s.len, rng);
    const double max_rel = testing::ExpectConv1dPoolMatches(
        RunEmulated(c.x, c.weights, c.bias, s.batch, s.c_in, s.len), c);
    std::printf(
        "emulated conv1d pool %d x %d x %d: max |got - float64| / "
        "sum|terms| = %.3g\n",
        s.batch, s.c_in, s.len, max_rel);
  }
}

}  // namespace
}  // namespace diarization::kernels
