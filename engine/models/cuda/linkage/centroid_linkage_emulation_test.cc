// The GPU linkage's kernels' own source (centroid_linkage_kernels.inc) run
// on host threads (testing/cuda_host_emulation.h: one block of 1024 host
// threads for the merge loop, the warps' shuffles and ballots, the flags'
// atomics) against the host's CentroidLinkageSquare, on fresh random
// problems of every kind the device test draws, small enough for host
// threads: every merge's clusters, size and height, bit for bit. It checks
// the kernels' logic (the candidates, the heap's order, the live clusters,
// the repairs) on every CI run; speed, races and the device's arithmetic
// remain for cuda_linkage_test and the sanitizers on the GPU.
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/common/indexed_min_heap.h"
#include "engine/pipeline/ahc.h"
#include "gtest/gtest.h"
#include "kernels/centroid_linkage.h"
#include "testing/linkage_problems.h"
// The order matters: the emulation after CUDA's headers (centroid_linkage.h),
// the kernels' source after the emulation.
// clang-format off
#include "testing/cuda_host_emulation.h"
#include "kernels/centroid_linkage_kernels.inc"
// clang-format on

namespace diarization::kernels {
namespace {

namespace dp = diarization::pipeline;
namespace k = centroid_linkage_internal;

// As LaunchCentroidLinkage does, on the host: the initial neighbours (one
// warp per row, 8 per block), then the merge loop (one block).
std::vector<dp::Merge> EmulatedLinkage(std::vector<double> m, int n,
                                       int* error) {
  std::vector<int> neighbor(n);
  std::vector<double> min_dist(n);
  constexpr int kRowsPerBlock = 8;
  testing::RunEmulatedGrid((n - 1 + kRowsPerBlock - 1) / kRowsPerBlock,
                           32 * kRowsPerBlock, [&] {
                             k::InitialNeighboursKernel(
                                 m.data(), n, neighbor.data(), min_dist.data());
                           });
  std::vector<LinkageMerge> raw(n - 1);
  *error = 0;
  testing::RunEmulatedGrid(
      1, k::kThreads,
      [&] {
        k::MergeLoopKernel(m.data(), n, neighbor.data(), min_dist.data(),
                           raw.data(), error);
      },
      k::SharedBytes(n));
  std::vector<dp::Merge> merges;
  for (const LinkageMerge& r : raw) {
    merges.push_back(
        {.a = r.a, .b = r.b, .distance = r.distance, .size = r.size});
  }
  return merges;
}

TEST(CentroidLinkageEmulationTest, KernelSourceGivesTheHostsMerges) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // A merge of the emulated block costs a few milliseconds (1024 host
  // threads at each barrier), so the problems stay small; 33 and 65 cross
  // a warp's and two warps' worth of clusters.
  std::vector<int> sizes = {2, 3, 33, 65};
  sizes.push_back(4 + static_cast<int>(rng() % 60));
  // LINKAGE_EMULATION_SIZES="1100,2100" replaces them, for a run by hand
  // over more than 1024 clusters, where a thread of the block takes several
  // (a minute or more per hundred merges on two cores).
  if (const char* env = std::getenv("LINKAGE_EMULATION_SIZES")) {
    sizes.clear();
    for (absl::string_view part : absl::StrSplit(env, ',')) {
      int n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(part, &n) && n >= 2 &&
                  n <= kCentroidLinkageMaxN)
          << "LINKAGE_EMULATION_SIZES: '" << part << "'";
      sizes.push_back(n);
    }
  }
  // LINKAGE_EMULATION_KINDS="2" keeps only these kinds (0 Gaussian, 1
  // clustered, 2 duplicates, 3 grid), for the same runs.
  std::vector<testing::LinkageProblemKind> kinds(
      std::begin(testing::kLinkageProblemKinds),
      std::end(testing::kLinkageProblemKinds));
  if (const char* env = std::getenv("LINKAGE_EMULATION_KINDS")) {
    kinds.clear();
    for (absl::string_view part : absl::StrSplit(env, ',')) {
      int kind = 0;
      ASSERT_TRUE(absl::SimpleAtoi(part, &kind) && kind >= 0 && kind <= 3)
          << "LINKAGE_EMULATION_KINDS: '" << part << "'";
      kinds.push_back(testing::kLinkageProblemKinds[kind]);
    }
  }
  int merges = 0;
  for (int n : sizes) {
    for (testing::LinkageProblemKind kind : kinds) {
      const int d = kind == testing::LinkageProblemKind::kGrid ? 2 : 16;
      const std::vector<float> x = testing::LinkageProblem(kind, n, d, rng);
      dp::SquareMatrix square = dp::PdistSquare(x, n, d);
      std::vector<double> m(square.begin(), square.end());
      int error = -1;
      const std::vector<dp::Merge> got = EmulatedLinkage(m, n, &error);
      ASSERT_EQ(error, 0);
      const std::vector<dp::Merge> want = dp::CentroidLinkageSquare(square, n);
      testing::ExpectSameMerges(
          got, want, absl::StrCat("n ", n, " kind ", static_cast<int>(kind)));
      merges += n - 1;
    }
  }
  std::printf("%d emulated merges identical to the host's\n", merges);
}

}  // namespace
}  // namespace diarization::kernels
