#include "engine/runtime/devices.h"

#include "engine/runtime/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseDeviceSpec, Forms) {
  auto cpu = ParseDeviceSpec("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(cpu->cpu);
  EXPECT_TRUE(cpu->cuda_ordinals.empty());

  auto all = ParseDeviceSpec("cuda");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->all_cuda);
  EXPECT_FALSE(all->cpu);

  auto two = ParseDeviceSpec("cuda:0,3");
  ASSERT_TRUE(two.ok());
  EXPECT_THAT(two->cuda_ordinals, ElementsAre(0, 3));

  // This test links the CPU-only variant: auto means cpu.
  auto autodetect = ParseDeviceSpec("auto");
  ASSERT_TRUE(autodetect.ok());
  EXPECT_TRUE(autodetect->cpu);
}

TEST(ParseDeviceSpec, Errors) {
  for (const char* bad :
       {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1,1", "CPU", ""}) {
    auto r = ParseDeviceSpec(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LoadDevices, CudaWithoutTheBackendFailsClearly) {
  // The device is checked before the directory is opened.
  auto r = LoadDevices("/nonexistent", {.device = "cuda"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("built without the CUDA backend"));
  r = LoadDevices("/nonexistent", {.device = "cuda:0"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("built without the CUDA backend"));
}

TEST(LoadDevices, PipelinesPerDeviceIsBounded) {
  // Checked before the directory is opened.
  for (int n : {0, -1, 9}) {
    auto r = LoadDevices("/nonexistent",
                         {.device = "cpu", .pipelines_per_device = n});
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr("pipelines_per_device"));
  }
}

// The CUDA networks are sized by default for the engine's default batches.
TEST(DevicesOptions, CudaBatchesAreTheEngineDefaults) {
  const EngineOptions engine;
  EXPECT_EQ(DevicesOptions().cuda.segmentation.max_batch,
            engine.segmentation_batch_size);
  EXPECT_EQ(DevicesOptions().cuda.embedding.max_batch,
            engine.embedding_batch_size);
}

// Issue 39: a CPU batch is one run of the CPU networks (4 windows), so a
// live window waits behind at most one run of bulk work; CUDA keeps the
// engine's batches.
TEST(DefaultBatchSizes, CpuBatchesAreOneNetworkRun) {
  const BatchSizes cpu = DefaultBatchSizes({.cpu = true});
  EXPECT_EQ(cpu.segmentation, 4);
  EXPECT_EQ(cpu.embedding, 4);
  EXPECT_TRUE(cpu.live_windows_first);
  const BatchSizes cuda = DefaultBatchSizes({.all_cuda = true});
  const EngineOptions engine;
  EXPECT_EQ(cuda.segmentation, engine.segmentation_batch_size);
  EXPECT_EQ(cuda.embedding, engine.embedding_batch_size);
  EXPECT_FALSE(cuda.live_windows_first);
}

TEST(LoadDevices, MissingDirectoryFails) {
  auto r = LoadDevices("/nonexistent/models", {.device = "cpu"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

}  // namespace
}  // namespace diarization::runtime
