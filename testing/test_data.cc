#include "testing/test_data.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace diarization::testing {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr,
               "FATAL: %s\nSet DIARIZATION_TEST_DATA to the golden data "
               "folder (../shared/data) or run scripts/test.sh.\n",
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

std::string SourceRoot() {
  // Under `bazel test`, the WORKSPACE file is a runfile symlink to the source
  // tree; under `bazel run` the workspace directory is given.
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) return ws;
  namespace fs = std::filesystem;
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    const char* dir = std::getenv(var);
    if (dir == nullptr) continue;
    const fs::path marker = fs::path(dir) / "diarization" / "WORKSPACE";
    std::error_code ec;
    const fs::path real = fs::canonical(marker, ec);
    if (!ec) return real.parent_path().string();
  }
  std::error_code ec;
  return fs::current_path(ec).string();
}

std::string TestDataDir() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* env = std::getenv("DIARIZATION_TEST_DATA"); env && *env) {
    dir = env;
  } else {
    dir = fs::path(SourceRoot()).parent_path() / "shared" / "data";
  }
  if (!fs::is_directory(dir)) {
    Fail("golden test data folder not found: " + dir.string());
  }
  return dir.string();
}

std::string SharedModelsDir() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* env = std::getenv("DIARIZATION_MODELS_DIR"); env && *env) {
    dir = env;
  } else {
    dir = fs::path(TestDataDir()).parent_path() / "models";
  }
  if (!fs::is_directory(dir)) {
    Fail("shared models folder not found: " + dir.string());
  }
  return dir.string();
}

}  // namespace diarization::testing
