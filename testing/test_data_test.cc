#include "testing/test_data.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {

TEST(TestDataTest, FindsGoldenDataAndModels) {
  namespace fs = std::filesystem;
  EXPECT_TRUE(fs::exists(fs::path(TestDataDir()) / "PROVENANCE.md"));
  EXPECT_TRUE(fs::exists(fs::path(SharedModelsDir()) / "community-1-plda"));
  EXPECT_TRUE(fs::exists(fs::path(SourceRoot()) / "WORKSPACE"));
}

}  // namespace
}  // namespace diarization::testing
