// The arena on a real GPU: the driver grants the first rung, mapped memory is
// usable by kernels and copies, and the budget holds against the real driver.
#include "engine/models/cuda/device_arena_cuda.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::models {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(DeviceArenaCudaTest, AllocatesUsableMemoryAndHoldsBudget) {
  DeviceArenaOptions o;
  o.device = 0;
  o.reservation_ladder = {size_t{64} << 30, size_t{1} << 30};
  o.budget_bytes = 256 * kMiB;
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  auto arena_or = CreateCudaDeviceArena(o);
  ASSERT_TRUE(arena_or.ok()) << arena_or.status();
  auto& arena = *arena_or;
  EXPECT_EQ(arena->Stats().rung_index, 0);
  EXPECT_GT(arena->Stats().granularity_bytes, 0u);

  // Two buffers with random data: round trip host -> arena -> arena -> host.
  const size_t n = 3 * kMiB / sizeof(float) + 17;
  std::vector<float> host(n), back(n, -1.0f);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : host) v = u(rng);
  auto a = arena->Allocate(n * sizeof(float), "test/a");
  auto b = arena->Allocate(n * sizeof(float), "test/b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(
      cudaMemcpy(*a, host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  ASSERT_EQ(cudaMemcpy(*b, *a, n * sizeof(float), cudaMemcpyDeviceToDevice),
            cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(back.data(), *b, n * sizeof(float), cudaMemcpyDeviceToHost),
      cudaSuccess);
  EXPECT_EQ(host, back);

  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  const auto st = arena->Stats();
  EXPECT_GE(free_before - free_after, st.mapped_bytes);
  EXPECT_EQ(st.owners.at("test/a").used_bytes,
            st.owners.at("test/b").used_bytes);

  // Over the budget: a clean ResourceExhausted, nothing more mapped.
  auto big = arena->Allocate(300 * kMiB, "test/big");
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LE(arena->Stats().mapped_bytes, o.budget_bytes);
  ASSERT_TRUE(arena->Free(*a).ok());
  ASSERT_TRUE(arena->Free(*b).ok());
}

}  // namespace
}  // namespace diarization::models
