// Offline diarization of one audio file with the CPU backend (no server):
// decode → 10 s windows → segmentation → powerset → embedding masks →
// embeddings → host pipeline (PLDA, AHC, VBx, reconstruction) → RTTM.
//
//   bazel run //tools:diarize -- --audio FILE --models DIR --out OUT.rttm
//       [--num-speakers N] [--min-speakers N] [--max-speakers N]
//       [--threads N] [--segmentation-batch-size N]
//       [--embedding-batch-size N] [--uri NAME] [--fast]
//       [--sweep-hints num_speakers=2,min_speakers=3,max_speakers=1]
//
// Dashes and underscores are both accepted in flag names. --threads and the
// batch sizes are the server's own flags (engine/runtime/backend_flags.h);
// only --device=cpu (or auto) is served here.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/audio/audio.h"
#include "engine/common/openblas_kernels.h"
#include "engine/common/status_macros.h"
#include "engine/common/user_path.h"
#include "engine/io/plda_files.h"
#include "engine/models/format/model_dir.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/rttm.h"
#include "engine/runtime/backend_flags.h"
#include "engine/runtime/devices.h"
#include "engine/runtime/offline_networks.h"

ABSL_FLAG(std::string, audio, "", "Audio file (WAV, FLAC, OGG; any rate).");
ABSL_FLAG(std::string, models, "",
          "Model directory (engine/models/format/model_dir.h).");
ABSL_FLAG(std::string, out, "", "RTTM file to write.");
ABSL_FLAG(int, num_speakers, 0, "Exact number of speakers (0 = unknown).");
ABSL_FLAG(int, min_speakers, 0, "Lower bound on speakers (0 = none).");
ABSL_FLAG(int, max_speakers, 0, "Upper bound on speakers (0 = none).");
ABSL_FLAG(std::string, uri, "",
          "RTTM file id (default: the audio file's stem).");
ABSL_FLAG(bool, fast, false, "FAST mode: 2 s window step, 10 VBx iterations.");
ABSL_FLAG(bool, exclusive, false,
          "Write the exclusive view (at most one speaker at a time).");
ABSL_FLAG(std::vector<std::string>, sweep_hints, {},
          "Also cluster the same network outputs with each of these hints "
          "(comma-separated num_speakers=N, min_speakers=N, max_speakers=N) "
          "and write both views of each beside --out: OUT.numN.rttm and "
          "OUT.numN.exclusive.rttm (minN, maxN). The networks run once.");

namespace {

namespace fs = std::filesystem;
using diarization::ResolveUserPath;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct SweepHint {
  diarization::pipeline::SpeakerHints hints;
  std::string suffix;  // num2, min3, max1
};

absl::StatusOr<SweepHint> ParseSweepHint(const std::string& text) {
  const size_t eq = text.find('=');
  int value = 0;
  if (eq == std::string::npos ||
      !absl::SimpleAtoi(text.substr(eq + 1), &value) || value < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sweep_hints: '", text,
                     "' is not num_speakers=N, min_speakers=N "
                     "or max_speakers=N with N >= 1"));
  }
  const std::string key = text.substr(0, eq);
  SweepHint h;
  if (key == "num_speakers") {
    h.hints.num_speakers = value;
  } else if (key == "min_speakers") {
    h.hints.min_speakers = value;
  } else if (key == "max_speakers") {
    h.hints.max_speakers = value;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--sweep_hints: unknown hint '", key,
                     "' (num_speakers, min_speakers, max_speakers)"));
  }
  h.suffix = absl::StrCat(key.substr(0, 3), value);
  return h;
}

absl::Status WriteRttm(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status Run() {
  using namespace diarization;
  const std::string audio_path = ResolveUserPath(absl::GetFlag(FLAGS_audio));
  const std::string models_path = ResolveUserPath(absl::GetFlag(FLAGS_models));
  const std::string out_path = ResolveUserPath(absl::GetFlag(FLAGS_out));
  if (audio_path.empty() || models_path.empty() || out_path.empty()) {
    return absl::InvalidArgumentError(
        "--audio, --models and --out are required");
  }
  ASSIGN_OR_RETURN(const runtime::BackendFlags backend,
                   runtime::BackendFlagsFromCommandLine());
  ASSIGN_OR_RETURN(const runtime::DeviceSpec spec,
                   runtime::ParseDeviceSpec(backend.devices.device));
  if (!spec.cpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", backend.devices.device,
                     ": diarize runs the CPU backend only; use --device=cpu"));
  }

  const auto t0 = Clock::now();
  ASSIGN_OR_RETURN(audio::Waveform wave, audio::DecodeFilePath(audio_path));
  ASSIGN_OR_RETURN(auto dir, models::ModelDirectory::Open(models_path));
  ASSIGN_OR_RETURN(runtime::Device device,
                   runtime::MakeCpuDevice(*dir, backend.devices.cpu));
  ASSIGN_OR_RETURN(pipeline::PldaModel plda, io::LoadPlda(dir->plda_dir()));
  const auto t_load = Clock::now();

  const pipeline::PipelineConfig config =
      absl::GetFlag(FLAGS_fast) ? pipeline::PipelineConfig::Fast()
                                : pipeline::PipelineConfig::Accurate();
  // The networks as the engine runs them (engine/runtime/offline_networks.h).
  ASSIGN_OR_RETURN(
      runtime::OfflineNetworksOutput nets,
      runtime::RunOfflineNetworks(
          device, wave.samples, config,
          {.segmentation_batch_size = backend.segmentation_batch_size,
           .embedding_batch_size = backend.embedding_batch_size,
           .crop_edges = &wave.crop_edges}));
  const int num_windows = nets.num_windows;
  const std::vector<float>& segmentations = nets.segmentations;
  const std::vector<float>& embeddings = nets.embeddings;
  const auto t_nets = Clock::now();

  pipeline::SpeakerHints hints{absl::GetFlag(FLAGS_num_speakers),
                               absl::GetFlag(FLAGS_min_speakers),
                               absl::GetFlag(FLAGS_max_speakers)};
  ASSIGN_OR_RETURN(pipeline::DiarizationOutput result,
                   pipeline::Diarize(segmentations, embeddings, num_windows,
                                     plda, config, hints, {}, &nets.summary));
  const auto t_end = Clock::now();

  std::string uri = absl::GetFlag(FLAGS_uri);
  if (uri.empty()) uri = fs::path(audio_path).stem().string();
  RETURN_IF_ERROR(WriteRttm(out_path, FormatRttm(absl::GetFlag(FLAGS_exclusive)
                                                     ? result.exclusive_segments
                                                     : result.segments,
                                                 uri)));
  std::string stem = out_path;
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".rttm") {
    stem.resize(stem.size() - 5);
  }
  for (const std::string& text : absl::GetFlag(FLAGS_sweep_hints)) {
    ASSIGN_OR_RETURN(const SweepHint sweep, ParseSweepHint(text));
    ASSIGN_OR_RETURN(
        pipeline::DiarizationOutput r,
        pipeline::Diarize(segmentations, embeddings, num_windows, plda, config,
                          sweep.hints, {}, &nets.summary));
    const std::string base = absl::StrCat(stem, ".", sweep.suffix);
    RETURN_IF_ERROR(
        WriteRttm(absl::StrCat(base, ".rttm"), FormatRttm(r.segments, uri)));
    RETURN_IF_ERROR(WriteRttm(absl::StrCat(base, ".exclusive.rttm"),
                              FormatRttm(r.exclusive_segments, uri)));
  }

  std::fprintf(
      stderr,
      "diarize: %.1f s of audio, %d windows, %zu speakers, %zu segments "
      "(%s)\n  load %.2f s, segmentation %.2f s, embeddings %.2f s, "
      "clustering %.2f s; RTFx %.1f (networks+clustering)\n",
      wave.duration_s(), num_windows, result.labels.size(),
      result.segments.size(), device.description.c_str(), Seconds(t0, t_load),
      nets.segmentation_s, nets.masks_s + nets.embedding_s,
      Seconds(t_nets, t_end), wave.duration_s() / Seconds(t_load, t_end));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // First: it may execute the binary again (engine/common/openblas_kernels.h).
  diarization::ReexecWithOpenBlasKernels(argv);
  absl::SetProgramUsageMessage(
      "Diarizes one audio file with the CPU backend and writes RTTM.\n"
      "  diarize --audio FILE --models DIR --out OUT.rttm [--num-speakers N]\n"
      "          [--min-speakers N] [--max-speakers N] [--threads N] [--fast]");
  // Accept --num-speakers as well as --num_speakers.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> argp;
  for (std::string& a : args) {
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      std::replace(a.begin() + 2,
                   eq == std::string::npos ? a.end() : a.begin() + eq, '-',
                   '_');
    }
    argp.push_back(a.data());
  }
  absl::ParseCommandLine(static_cast<int>(argp.size()), argp.data());
  absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "diarize: %s\n", status.ToString().c_str());
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
