// The one flags module (backend_flags.h): each flag lands in the one field
// it names, the batch sizes size the CUDA networks, and bad values are
// refused with the flag's name. This binary links the CPU-only devices, so
// --device=auto means the CPU.
#include "engine/runtime/backend_flags.h"

#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "engine/runtime/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(int, pipelines_per_device);
ABSL_DECLARE_FLAG(int, segmentation_batch_size);
ABSL_DECLARE_FLAG(int, embedding_batch_size);
ABSL_DECLARE_FLAG(std::string, cuda_embedding_precision);
ABSL_DECLARE_FLAG(std::string, cuda_conv_engine_cache);

namespace diarization::runtime {
namespace {

using ::testing::HasSubstr;

class BackendFlagsTest : public ::testing::Test {
 private:
  absl::FlagSaver saver_;  // each test starts from the defaults
};

// The defaults are the service's: what a server started without flags runs.
TEST_F(BackendFlagsTest, DefaultsAreTheServiceDefaults) {
  auto f = BackendFlagsFromCommandLine();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->devices.device, "auto");
  EXPECT_EQ(f->devices.pipelines_per_device, 1);
  EXPECT_EQ(f->devices.cpu.threads, 0);
  // auto is the CPU here: batches of one CPU network run (4 windows) in
  // both stages, live windows first (issue 39; devices.h).
  EXPECT_EQ(f->segmentation_batch_size, 4);
  EXPECT_EQ(f->embedding_batch_size, 4);
  EXPECT_TRUE(f->live_windows_first);
  const models::CudaBackendOptions defaults;
  const models::CudaModelOptions& emb = f->devices.cuda.embedding;
  EXPECT_EQ(emb.precision, "tf32");
  EXPECT_EQ(emb.conv_api, "auto");
  EXPECT_EQ(emb.conv_engine_cache, "");
  EXPECT_EQ(emb.workspace_bytes, defaults.embedding.workspace_bytes);
  EXPECT_TRUE(emb.layer1_conv_kernel);
  EXPECT_FALSE(emb.timed_conv_algorithms);
  EXPECT_EQ(f->devices.cuda.segmentation.lstm_kernel, "qualified");
  EXPECT_EQ(f->devices.cuda.segmentation.workspace_bytes,
            defaults.segmentation.workspace_bytes);
}

TEST_F(BackendFlagsTest, EachFlagSetsTheFieldItNames) {
  absl::SetFlag(&FLAGS_device, "cuda:1");
  absl::SetFlag(&FLAGS_threads, 3);
  absl::SetFlag(&FLAGS_pipelines_per_device, 2);
  absl::SetFlag(&FLAGS_embedding_batch_size, 16);
  absl::SetFlag(&FLAGS_cuda_embedding_precision, "fp32");
  absl::SetFlag(&FLAGS_cuda_conv_engine_cache, "/tmp/engines.tsv");
  auto f = BackendFlagsFromCommandLine();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->devices.device, "cuda:1");
  EXPECT_EQ(f->devices.cpu.threads, 3);
  EXPECT_EQ(f->devices.pipelines_per_device, 2);
  // A GPU device: the engine's CUDA segmentation batch.
  EXPECT_EQ(f->segmentation_batch_size,
            EngineOptions().segmentation_batch_size);
  EXPECT_EQ(f->embedding_batch_size, 16);
  const models::CudaModelOptions& seg = f->devices.cuda.segmentation;
  const models::CudaModelOptions& emb = f->devices.cuda.embedding;
  EXPECT_EQ(seg.max_batch, f->segmentation_batch_size);
  EXPECT_EQ(emb.max_batch, 16);
  EXPECT_EQ(emb.precision, "fp32");
  EXPECT_EQ(emb.conv_engine_cache, "/tmp/engines.tsv");
  // No flag reaches the workspace: the backend's default.
  EXPECT_EQ(emb.workspace_bytes,
            models::CudaBackendOptions().embedding.workspace_bytes);
  // Only the embedding takes the embedding's switches.
  EXPECT_EQ(seg.precision, "fp32");
  const std::string line = DescribeBackendFlags(*f);
  EXPECT_THAT(line, HasSubstr("cuda_conv_engine_cache=/tmp/engines.tsv"));
  EXPECT_THAT(line, HasSubstr("segmentation_batch_size=128"));
}

TEST_F(BackendFlagsTest, AnExplicitSegmentationBatchSizesTheNetwork) {
  absl::SetFlag(&FLAGS_segmentation_batch_size, 8);
  auto f = BackendFlagsFromCommandLine();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->segmentation_batch_size, 8);
  EXPECT_EQ(f->devices.cuda.segmentation.max_batch, 8);
}

TEST_F(BackendFlagsTest, BadValuesNameTheirFlag) {
  struct Case {
    const char* flag;
    void (*set)();
  };
  const Case cases[] = {
      {"--cuda_embedding_precision",
       [] { absl::SetFlag(&FLAGS_cuda_embedding_precision, "mixed"); }},
      {"--segmentation_batch_size",
       [] { absl::SetFlag(&FLAGS_segmentation_batch_size, -4); }},
      {"--embedding_batch_size",
       [] { absl::SetFlag(&FLAGS_embedding_batch_size, -1); }},
      {"--device", [] { absl::SetFlag(&FLAGS_device, "gpu"); }},
  };
  for (const Case& c : cases) {
    absl::FlagSaver saver;
    c.set();
    auto f = BackendFlagsFromCommandLine();
    ASSERT_FALSE(f.ok()) << c.flag;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr(c.flag));
  }
}

}  // namespace
}  // namespace diarization::runtime
