// The GPU's distances and linkage against the host's PdistDirectScalar (scipy's
// loop) and CentroidLinkageSquare (which matches scipy merge for merge:
// engine/pipeline/ahc_scipy_parity_test), on fresh random problems: every
// distance, and every merge's clusters, size and height, bit for bit.
#include "engine/models/cuda/linkage/cuda_linkage.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "engine/models/cuda/device_arena_cuda.h"
#include "engine/pipeline/ahc.h"
#include "engine/pipeline/pdist_direct.h"
#include "gtest/gtest.h"
#include "testing/linkage_problems.h"

namespace diarization::models::cuda {
namespace {

namespace dp = diarization::pipeline;

std::shared_ptr<DeviceArena> Arena() {
  DeviceArenaOptions o;
  o.budget_bytes = size_t{4} << 30;
  auto a = CreateCudaDeviceArena(o);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? std::shared_ptr<DeviceArena>(std::move(*a)) : nullptr;
}

using testing::ExpectSameMerges;
using Kind = testing::LinkageProblemKind;

std::vector<float> Problem(Kind kind, int n, int d, std::mt19937_64& rng) {
  return testing::LinkageProblem(kind, n, d, rng);
}

TEST(CudaLinkage, MatchesHostLinkageBitForBit) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto linkage = CudaLinkage::Create(arena.get());
  ASSERT_TRUE(linkage.ok()) << linkage.status();
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<int> sizes = {2, 3, 4, 31, 33, 257, 1024, 1025, 3200, 4096};
  for (int i = 0; i < 6; ++i)
    sizes.push_back(2 + static_cast<int>(rng() % 4095));
  // CUDA_LINKAGE_TEST_MAX_N caps the sizes, for the compute-sanitizer runs
  // (compute-sanitizer, by hand), where n = 4096 would take too long.
  if (const char* cap = std::getenv("CUDA_LINKAGE_TEST_MAX_N")) {
    const int max_n = std::atoi(cap);
    std::erase_if(sizes, [&](int n) { return n > max_n; });
    std::printf("sizes capped at %d\n", max_n);
  }
  int problems = 0, total_merges = 0;
  for (int n : sizes) {
    for (Kind kind :
         {Kind::kGaussian, Kind::kClustered, Kind::kDuplicates, Kind::kGrid}) {
      const int d = kind == Kind::kGrid ? 2 : 256;
      const std::vector<float> x = Problem(kind, n, d, rng);
      const std::string what = "n " + std::to_string(n) + " kind " +
                               std::to_string(static_cast<int>(kind));
      // The reference distances: scipy's plain loop, not the host's vector
      // paths (which pdist_direct_test holds to it).
      std::vector<double> condensed(static_cast<size_t>(n) * (n - 1) / 2);
      dp::PdistDirectScalar(x, n, d, condensed);
      std::vector<double> device_distances;
      absl::StatusOr<std::vector<dp::Merge>> gpu =
          (*linkage)->Run(x, n, d, &device_distances);
      ASSERT_TRUE(gpu.ok()) << what << ": " << gpu.status();
      ASSERT_EQ(device_distances.size(), static_cast<size_t>(n) * n) << what;
      size_t k = 0;
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(device_distances[static_cast<size_t>(i) * n + i], 0.0)
            << what << " diagonal " << i;
        for (int j = i + 1; j < n; ++j, ++k) {
          const double upper = device_distances[static_cast<size_t>(i) * n + j];
          const double lower = device_distances[static_cast<size_t>(j) * n + i];
          ASSERT_EQ(std::memcmp(&upper, &condensed[k], 8), 0)
              << what << " d(" << i << ", " << j << "): " << upper << " vs "
              << condensed[k];
          ASSERT_EQ(std::memcmp(&lower, &condensed[k], 8), 0)
              << what << " d(" << j << ", " << i << ")";
        }
      }
      dp::SquareMatrix full = dp::PdistSquare(x, n, d);
      const std::vector<dp::Merge> host = dp::CentroidLinkageSquare(full, n);
      ExpectSameMerges(*gpu, host, what);
      ++problems;
      total_merges += n - 1;
    }
  }
  const CudaLinkage::Counts c = (*linkage)->counts();
  EXPECT_EQ(c.ran, problems);
  EXPECT_EQ(c.failed, 0);
  std::printf("%d problems, %d merges identical\n", problems, total_merges);
}

TEST(CudaLinkage, AhcClusterWithTheAcceleratorGivesTheHostLabels) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto linkage = CudaLinkage::Create(arena.get());
  ASSERT_TRUE(linkage.ok()) << linkage.status();
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = 3000, d = 256;
  std::vector<float> x(static_cast<size_t>(n) * d);
  // Not normalised: AhcCluster does that.
  std::vector<float> centers(static_cast<size_t>(6) * d);
  for (float& v : centers) v = normal(rng);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < d; ++t) {
      x[static_cast<size_t>(i) * d + t] =
          3.0f *
          (centers[static_cast<size_t>(i % 6) * d + t] + 0.7f * normal(rng));
    }
  }
  const std::vector<int> host = dp::AhcCluster(x, n, d);
  dp::AhcOptions o;
  o.accelerator = linkage->get();
  // Four clusterings at once: each is answered by the GPU or, when it is
  // busy, by the host; all give the host's labels.
  std::vector<std::vector<int>> labels(4);
  std::vector<dp::AhcTimes> times(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(
        [&, i] { labels[i] = dp::AhcCluster(x, n, d, o, &times[i]); });
  }
  for (auto& t : threads) t.join();
  int accelerated = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(labels[i], host) << "call " << i;
    accelerated += times[i].accelerated;
  }
  const CudaLinkage::Counts c = (*linkage)->counts();
  EXPECT_EQ(c.ran, accelerated);
  EXPECT_EQ(c.ran + c.busy, 4);
  EXPECT_GE(c.ran, 1);
  EXPECT_EQ(c.failed, 0);
  std::printf("%d of 4 on the GPU, %lld turned away busy\n", accelerated,
              static_cast<long long>(c.busy));
}

// A reserved call: the rows it is given yield the host's merges; while it is
// held a second reservation is turned away (busy), and after it a new one is
// taken; sizes and widths outside its range are refused.
TEST(CudaLinkage, AReservedCallGivesTheHostMerges) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto linkage = CudaLinkage::Create(arena.get());
  ASSERT_TRUE(linkage.ok()) << linkage.status();
  std::mt19937_64 rng(std::random_device{}());
  for (int n : {2, 700, 2500 + static_cast<int>(rng() % 1597)}) {
    const std::vector<float> x = Problem(Kind::kClustered, n, 256, rng);
    dp::SquareMatrix full = dp::PdistSquare(x, n, 256);
    std::unique_ptr<dp::LinkageAccelerator::Call> call =
        (*linkage)->Reserve(n, 256);
    ASSERT_NE(call, nullptr) << "n " << n;
    EXPECT_EQ((*linkage)->Reserve(n, 256), nullptr);  // held: busy
    std::vector<dp::Merge> gpu;
    ASSERT_TRUE(call->Run(x, &gpu)) << "n " << n;
    ExpectSameMerges(gpu, dp::CentroidLinkageSquare(full, n),
                     "reserved n " + std::to_string(n));
  }
  EXPECT_NE((*linkage)->Reserve(64, 256), nullptr);  // released
  EXPECT_EQ((*linkage)->Reserve(1, 256), nullptr);   // outside its range
  EXPECT_EQ((*linkage)->Reserve(4097, 256), nullptr);
  EXPECT_EQ((*linkage)->Reserve(64, 257), nullptr);  // wider than max_d
  const CudaLinkage::Counts c = (*linkage)->counts();
  EXPECT_EQ(c.ran, 3);
  EXPECT_EQ(c.busy, 3);
  EXPECT_EQ(c.failed, 0);
  EXPECT_GT(c.distances_s, 0.0);
}

TEST(CudaLinkage, RefusesSizesOutsideItsRange) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto small = CudaLinkage::Create(arena.get(), 64, 8);
  ASSERT_TRUE(small.ok()) << small.status();
  std::vector<float> rows(65 * 9, 1.0f);
  EXPECT_EQ((*small)->Run(rows, 65, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*small)->Run(rows, 1, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*small)->Run(rows, 64, 9).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*small)
                ->Run(std::span<const float>(rows).first(10), 64, 8)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(CudaLinkage::Create(arena.get(), 5000).ok());
  EXPECT_FALSE(CudaLinkage::Create(arena.get(), 64, 0).ok());
}

}  // namespace
}  // namespace diarization::models::cuda
