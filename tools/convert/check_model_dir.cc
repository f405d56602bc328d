// Opens a model directory with the service's own checks
// (engine/models/format/model_dir.h) and prints its summary, or the error.
//
//   bazel run //tools/convert:check_model_dir -- DIR
#include <cstdio>
#include <string>

#include "engine/common/user_path.h"
#include "engine/models/format/model_dir.h"

namespace {

void Print(const char* role, const diarization::models::ModelSummary& m) {
  std::printf("%s: %s (%s)%s%s\n  source: %s\n", role, m.name.c_str(),
              m.architecture.c_str(),
              m.precision.empty() ? "" : (", " + m.precision).c_str(),
              m.random_weights ? ", RANDOM WEIGHTS" : "", m.source.c_str());
  for (const auto& f : m.files) {
    std::printf("  %s  %s  %lld bytes\n", f.sha256.c_str(), f.path.c_str(),
                static_cast<long long>(f.bytes));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: check_model_dir DIR\n");
    return 2;
  }
  const std::string dir = diarization::ResolveUserPath(argv[1]);
  auto md = diarization::models::ModelDirectory::Open(dir);
  if (!md.ok()) {
    std::fprintf(stderr, "check_model_dir: %s\n",
                 std::string(md.status().message()).c_str());
    return 1;
  }
  const auto s = (*md)->summary();
  std::printf("OK %s (format version %d)\n", s.dir.c_str(), s.format_version);
  Print("segmentation", s.segmentation);
  Print("embedding", s.embedding);
  Print("plda", s.plda);
  return 0;
}
