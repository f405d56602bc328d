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
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(size_t(s.batch) * s.c_in * s.len),
        w(size_t(k::kCo) * s.c_in * k::kTaps), bias(k::kCo);
    for (float& v : x) v = g(rng);
    for (float& v : w) v = g(rng) / std::sqrt(float(s.c_in * k::kTaps));
    for (float& v : bias) v = 0.3f * g(rng);
    const std::vector<float> got =
        RunEmulated(x, w, bias, s.batch, s.c_in, s.len);
    const testing::Conv1dPoolReference want = testing::Conv1dMaxPool3Reference(
        x, w, bias, s.batch, s.c_in, k::kCo, s.len, k::kTaps);
    ASSERT_EQ(got.size(), want.y.size());
    double max_rel = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "output " << i << " not written";
      // The float32 FMA chain's bound (conv1d_pool_test says why).
      const double err = std::abs(got[i] - want.y[i]);
      const double bound =
          s.c_in * k::kTaps * 6e-8 * want.scale[i] + 1e-7 * std::abs(want.y[i]);
      ASSERT_LE(err, bound)
          << "output " << i << ": got " << got[i] << ", want " << want.y[i];
      max_rel = std::max(max_rel, err / (want.scale[i] + 1e-30));
    }
    std::printf(
        "emulated conv1d pool %d x %d x %d: max |got - float64| / "
        "sum|terms| = %.3g\n",
        s.batch, s.c_in, s.len, max_rel);
  }
}

}  // namespace
}  // namespace diarization::kernels
