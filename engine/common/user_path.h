// Command-line paths under `bazel run`: the binary starts in its runfiles
// tree, so a relative path the user typed means the directory `bazel run`
// was called from (BUILD_WORKING_DIRECTORY).
#ifndef DIARIZATION_ENGINE_COMMON_USER_PATH_H_
#define DIARIZATION_ENGINE_COMMON_USER_PATH_H_

#include <string>

namespace diarization {

// `path` made relative to $BUILD_WORKING_DIRECTORY when it is relative and
// that variable is set; otherwise (absolute, empty, or not under `bazel run`)
// unchanged.
std::string ResolveUserPath(const std::string& path);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_USER_PATH_H_
