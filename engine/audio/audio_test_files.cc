#include "engine/audio/audio_test_files.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"

namespace diarization::audio::testing_files {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::vector<std::byte> ReadBytes(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  EXPECT_TRUE(stream.good()) << "missing " << path;
  std::vector<char> chars((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

void RunCommand(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

void Sox(const std::string& args) { RunCommand("sox " + args); }

}  // namespace diarization::audio::testing_files
