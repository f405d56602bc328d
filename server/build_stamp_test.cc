#include "server/build_stamp.h"

#include <regex>
#include <string>

#include "gtest/gtest.h"

namespace diarization::server {
namespace {

// CI builds from a git clone, so the stamp there is a commit; "unknown" is
// accepted only where the build had no git checkout.
TEST(BuildStampTest, IsACommitOrUnknown) {
  const std::string commit = kBuildCommit;
  EXPECT_TRUE(
      std::regex_match(commit, std::regex("[0-9a-f]{40}(-dirty)?|unknown")))
      << "'" << commit << "'";
}

}  // namespace
}  // namespace diarization::server
