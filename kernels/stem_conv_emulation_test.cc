// The direct stem kernel's own source (stem_conv_kernel.inc) run on host
// threads (testing/cuda_host_emulation.h) against the float64 reference, on
// fresh random inputs of the GPU test's small and odd shapes (every padding
// edge) and a slice of the real one: its indexing and float4 stores checked
// on every CI run. The GPU's arithmetic and speed remain for stem_conv_test.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "testing/stem_conv_reference.h"
// The kernel's source after the emulation's macros.
// clang-format off
#include "testing/cuda_host_emulation.h"
#include "kernels/stem_conv_kernel.inc"
// clang-format on

namespace diarization::kernels {
namespace {

namespace k = stem_conv_internal;

TEST(StemConvEmulationTest, KernelSourceMatchesFloat64Reference) {
  std::mt19937 rng(std::random_device{}());
  struct Shape {
    int n, h, w;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{2, 1, 7}, Shape{3, 5, 1},
                        Shape{3, 7, 13}, Shape{1, 80, 40}}) {
    const testing::StemConvCase c =
        testing::MakeStemConvCase(s.n, s.h, s.w, rng);
    // As LaunchStemConv3x3Relu does: a thread per (pixel, 4 channels).
    const int64_t total = int64_t{s.n} * s.h * s.w * k::kQuads;
    const unsigned blocks =
        static_cast<unsigned>((total + k::kThreads - 1) / k::kThreads);
    std::vector<float4> y(static_cast<size_t>(total),
                          float4{NAN, NAN, NAN, NAN});
    testing::RunEmulatedGrid(blocks, k::kThreads, [&] {
      k::StemConvKernel(c.x.data(), c.weights.data(), c.bias.data(), y.data(),
                        s.h, s.w, total);
    });
    const float* flat = reinterpret_cast<const float*>(y.data());
    const double max_err = testing::ExpectStemConvMatches(
        std::vector<float>(flat, flat + 4 * y.size()), c);
    std::printf("emulated stem conv %dx%dx%d: max |got - float64| = %.3g\n",
                s.n, s.h, s.w, max_err);
  }
}

}  // namespace
}  // namespace diarization::kernels
