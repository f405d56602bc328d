#include "engine/common/user_path.h"

#include <cstdlib>
#include <filesystem>

namespace diarization {

std::string ResolveUserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || std::filesystem::path(path).is_absolute() ||
      cwd == nullptr) {
    return path;
  }
  return (std::filesystem::path(cwd) / path).string();
}

}  // namespace diarization
