#include "clients/cli/batch_inputs.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "clients/cli/batch_runner.h"
#include "gtest/gtest.h"

namespace diarization::client {
namespace {

namespace fs = std::filesystem;

class BatchInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = fs::path(tmp != nullptr ? tmp : "/tmp") / "batch_inputs";
    fs::remove_all(root_);
    for (const char* f :
         {"in/b/x.wav", "in/a/x.FLAC", "in/a/deep/y.ogg", "in/notes.txt",
          "in/.hidden/z.wav", "in/a/.w.wav", "single.mp3", "other/x.wav"}) {
      Touch(f);
    }
  }
  void Touch(const std::string& relative) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << "x";
  }
  std::string P(const std::string& relative) const {
    return (root_ / relative).string();
  }
  fs::path root_;
};

TEST_F(BatchInputsTest, FoldersRecursivelyInPathOrderFilesAsGiven) {
  auto inputs = ListBatchInputs({P("single.mp3"), P("in")});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  std::vector<std::pair<std::string, std::string>> got;
  for (const BatchInput& i : *inputs) got.emplace_back(i.path, i.output_stem);
  const std::vector<std::pair<std::string, std::string>> want = {
      {P("single.mp3"), "single"},
      {P("in/a/deep/y.ogg"), "a/deep/y"},
      {P("in/a/x.FLAC"), "a/x"},
      {P("in/b/x.wav"), "b/x"},
  };
  EXPECT_EQ(got, want);
}

TEST_F(BatchInputsTest, TwoInputsWithOneOutputAreRefused) {
  auto inputs = ListBatchInputs({P("other/x.wav"), P("in/b/x.wav")});
  ASSERT_FALSE(inputs.ok());
  EXPECT_NE(inputs.status().message().find("x.rttm"), std::string::npos)
      << inputs.status();
}

TEST_F(BatchInputsTest, MissingOrEmptyIsRefused) {
  EXPECT_FALSE(ListBatchInputs({P("nope.wav")}).ok());
  Touch("empty/readme.txt");
  EXPECT_FALSE(ListBatchInputs({P("empty")}).ok());
  EXPECT_FALSE(ListBatchInputs({}).ok());
}

TEST(RetryDelayTest, FollowsTheHintElseBacksOff) {
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(1, 2.5, 0.0), 2.5);
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(4, 2.5, 1.0), 3.0);  // +20 % jitter
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(1, -1, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(3, -1, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(20, -1, 0.0), 30.0);
  EXPECT_DOUBLE_EQ(RetryDelaySeconds(1, 0.0, 0.0), 0.0);
}

}  // namespace
}  // namespace diarization::client
