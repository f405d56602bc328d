// The GPU distances kernel's own source (euclidean_distances_kernel.inc)
// run on host threads (testing/cuda_host_emulation.h) against scipy's plain
// loop (pipeline::PdistDirectScalar), bit for bit, on fresh random problems
// of the linkage tests' kinds: both triangles, the zero diagonal, partial
// tiles and coordinate chunks. ADR 0088's promise (the same distances
// whichever device computes them) is checked on every CI run;
// cuda_linkage_test checks the device's own arithmetic.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/pipeline/pdist_direct.h"
#include "gtest/gtest.h"
#include "testing/linkage_problems.h"
// The kernel's source after the emulation's macros.
// clang-format off
#include "testing/cuda_host_emulation.h"
#include "kernels/euclidean_distances_kernel.inc"
// clang-format on

namespace diarization::kernels {
namespace {

namespace k = euclidean_distances_internal;

TEST(EuclideanDistancesEmulationTest, KernelSourceGivesScipysLoopBitForBit) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  struct Shape {
    int n, d;
  };
  // One point; a partial tile and a partial coordinate chunk; exactly two
  // tiles and a chunk; three tiles of real embedding rows.
  for (const Shape s :
       {Shape{1, 3}, Shape{5, 33}, Shape{128, 32}, Shape{150, 256}}) {
    for (testing::LinkageProblemKind kind : testing::kLinkageProblemKinds) {
      const std::vector<float> x = testing::LinkageProblem(kind, s.n, s.d, rng);
      std::vector<double> m(size_t(s.n) * s.n, -1.0);
      const unsigned tiles = (s.n + k::kTile - 1) / k::kTile;
      testing::RunEmulatedGrid2d(
          {tiles, tiles, 1}, {k::kSide, k::kSide, 1},
          [&] { k::EuclideanDistancesKernel(x.data(), s.n, s.d, m.data()); });
      std::vector<double> want(size_t(s.n) * (s.n - 1) / 2);
      pipeline::PdistDirectScalar(x, s.n, s.d, want);
      const std::string what = "n " + std::to_string(s.n) + " d " +
                               std::to_string(s.d) + " kind " +
                               std::to_string(static_cast<int>(kind));
      for (int i = 0; i < s.n; ++i) {
        ASSERT_EQ(m[size_t(i) * s.n + i], 0.0) << what << " diagonal " << i;
        for (int j = i + 1; j < s.n; ++j) {
          const double w =
              want[size_t(s.n) * i - size_t(i) * (i + 1) / 2 + j - i - 1];
          const double up = m[size_t(i) * s.n + j], lo = m[size_t(j) * s.n + i];
          ASSERT_EQ(std::memcmp(&up, &w, 8), 0)
              << what << " (" << i << ", " << j << "): " << up << " vs " << w;
          ASSERT_EQ(std::memcmp(&lo, &w, 8), 0)
              << what << " (" << j << ", " << i << "): " << lo << " vs " << w;
        }
      }
    }
  }
}

}  // namespace
}  // namespace diarization::kernels
