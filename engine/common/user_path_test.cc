#include "engine/common/user_path.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace diarization {
namespace {

TEST(UserPathTest, RelativePathsAreTheCallersUnderBazelRun) {
  setenv("BUILD_WORKING_DIRECTORY", "/home/me/work", 1);
  EXPECT_EQ(ResolveUserPath("a/b.rttm"), "/home/me/work/a/b.rttm");
  EXPECT_EQ(ResolveUserPath("/abs/b.rttm"), "/abs/b.rttm");
  EXPECT_EQ(ResolveUserPath(""), "");
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(ResolveUserPath("a/b.rttm"), "a/b.rttm");
}

}  // namespace
}  // namespace diarization
