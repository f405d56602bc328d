// Runs the host pipeline (everything after the networks) on a fixture
// folder laid out like ../shared/data/findit-dia-parity/NN_*/ and writes the
// RTTM pyannote would write.
//
//   bazel run //tools:cluster -- --fixture DIR --out OUT.rttm
//       [--num-speakers N] [--min-speakers N] [--max-speakers N]
//       [--plda DIR] [--uri URI] [--step-samples 16000|32000]
//
// DIR holds segmentations.npz and raw_embeddings.npz (and, optionally,
// reconstruction.npz whose chunk_step sets the window step). The PLDA folder
// defaults to $DIARIZATION_MODELS_DIR/community-1-plda, else
// ../shared/models/community-1-plda beside the workspace. Relative paths are
// taken from the directory `bazel run` was called in.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/common/user_path.h"
#include "engine/io/fixture.h"
#include "engine/io/npy.h"
#include "engine/io/plda_files.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"

namespace {

namespace fs = std::filesystem;
using diarization::ResolveUserPath;
namespace dp = diarization::pipeline;

constexpr char kUsage[] =
    "usage: cluster --fixture DIR --out OUT.rttm [--num-speakers N] "
    "[--min-speakers N] [--max-speakers N] [--plda DIR] [--uri URI] "
    "[--step-samples N]\n";

std::string DefaultPldaDir() {
  if (const char* models = std::getenv("DIARIZATION_MODELS_DIR")) {
    return (fs::path(models) / "community-1-plda").string();
  }
  fs::path root = fs::current_path();
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) root = ws;
  return (root / ".." / "shared" / "models" / "community-1-plda")
      .lexically_normal()
      .string();
}

int Fail(const std::string& message) {
  std::cerr << "cluster: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a.rfind("--", 0) != 0)
      return Fail(absl::StrCat("unexpected argument '", a, "'\n", kUsage));
    std::string key = a.substr(2), value;
    const size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Fail(absl::StrCat("--", key, " needs a value\n", kUsage));
    }
    for (char& ch : key) {
      if (ch == '_') ch = '-';
    }
    static const char* kKnown[] = {
        "fixture",      "out",  "num-speakers", "min-speakers",
        "max-speakers", "plda", "uri",          "step-samples"};
    bool known = false;
    for (const char* k : kKnown) known |= key == k;
    if (!known) return Fail(absl::StrCat("unknown flag --", key, "\n", kUsage));
    args[key] = value;
  }
  if (!args.count("fixture") || !args.count("out"))
    return Fail(absl::StrCat("--fixture and --out are required\n", kUsage));

  diarization::pipeline::SpeakerHints hints;
  diarization::pipeline::PipelineConfig config;
  auto parse_int = [&](const char* key, auto* out) -> bool {
    auto it = args.find(key);
    if (it == args.end()) return true;
    long long v = 0;
    if (!absl::SimpleAtoi(it->second, &v) || v < 0) {
      std::cerr << "cluster: --" << key
                << " must be a non-negative integer, got '" << it->second
                << "'\n";
      return false;
    }
    *out = v;
    return true;
  };
  if (!parse_int("num-speakers", &hints.num_speakers) ||
      !parse_int("min-speakers", &hints.min_speakers) ||
      !parse_int("max-speakers", &hints.max_speakers) ||
      !parse_int("step-samples", &config.step_samples)) {
    return 1;
  }

  const std::string fixture = ResolveUserPath(args["fixture"]);
  const std::string out_path = ResolveUserPath(args["out"]);
  const std::string plda_dir =
      args.count("plda") ? ResolveUserPath(args["plda"]) : DefaultPldaDir();

  auto inputs = diarization::io::LoadFinditFixture(fixture);
  if (!inputs.ok()) return Fail(std::string(inputs.status().message()));
  if (args.count("uri")) inputs->uri = args["uri"];
  // Without --step-samples, a recorded window step (findit layout:
  // reconstruction.npz:chunk_step, seconds) selects the window step, so a
  // FAST-mode (2 s) recording is read on its own grid.
  if (!args.count("step-samples")) {
    auto step = diarization::io::ReadNpzMember(fixture + "/reconstruction.npz",
                                               "chunk_step");
    if (step.ok() && step->size() == 1) {
      const double step_s = step->ToDouble()[0];
      if (step_s > 0)
        config.step_samples = std::llround(step_s * diarization::kSampleRateHz);
    }
  }
  auto plda = diarization::io::LoadPlda(plda_dir);
  if (!plda.ok()) {
    return Fail(absl::StrCat(plda.status().message(), " (PLDA folder ",
                             plda_dir,
                             "; set --plda or DIARIZATION_MODELS_DIR)"));
  }
  auto result = dp::DiarizeDetailed(inputs->segmentations, inputs->embeddings,
                                    inputs->num_windows, *plda, config, hints,
                                    inputs->uri);
  if (!result.ok()) return Fail(std::string(result.status().message()));

  const std::string rttm =
      diarization::FormatRttm(result->output.segments, inputs->uri, 3);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) return Fail(absl::StrCat("cannot write ", out_path));
  out << rttm;
  out.close();
  if (!out) return Fail(absl::StrCat("error writing ", out_path));
  const auto& cl = result->clustering;
  std::cerr << "cluster: " << inputs->num_windows << " windows, "
            << cl.train.size() << " training embeddings, "
            << (cl.ahc_labels.empty() ? 0
                                      : *std::max_element(cl.ahc_labels.begin(),
                                                          cl.ahc_labels.end()) +
                                            1)
            << " AHC clusters, " << cl.num_clusters << " speakers"
            << (cl.kmeans ? " (KMeans)" : "") << ", "
            << result->output.segments.size() << " segments -> " << out_path
            << "\n";
  return 0;
}
