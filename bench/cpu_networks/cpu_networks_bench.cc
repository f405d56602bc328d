// Time of the CPU networks per minute of audio.
//
// In the pipeline every second of audio adds one 10 s window (1 s step), and
// each window goes through the segmentation network once and the embedding
// network once (trunk once, 3 speaker masks). So network time per minute of
// audio = 60 × (segmentation + embedding time per window). Windows are real
// speech; weights are a model directory (random weights by default, which
// cost exactly what real ones do).
//
//   bazel run -c opt //bench/cpu_networks:cpu_networks_bench --
//       --models DIR [--threads 2] [--batch 4] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/audio/audio.h"
#include "engine/models/cpu/cpu_backend.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"

ABSL_FLAG(std::string, models, "",
          "Model directory; empty = random weights written to a temp dir.");
ABSL_FLAG(
    std::string, audio, "",
    "Speech file (default: ../shared/data/pyannote-audio/sample/sample.wav).");
ABSL_FLAG(int, threads, 2, "OpenMP threads.");
ABSL_FLAG(int, batch, 4, "Windows per call.");
ABSL_FLAG(int, repeats, 3, "Timed repetitions (the best is reported).");
ABSL_FLAG(std::string, only, "", "'seg' or 'emb' to time one network.");
ABSL_FLAG(bool, lstm_onednn, false,
          "Use oneDNN's lstm_forward instead of projection + recurrence.");

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

fs::path SharedDir() {
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return (ws ? fs::path(ws) : fs::current_path()).parent_path() / "shared";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace diarization;
  absl::ParseCommandLine(argc, argv);
  std::string models_dir = absl::GetFlag(FLAGS_models);
  if (models_dir.empty()) {
    models_dir =
        (fs::temp_directory_path() / "cpu_networks_bench_models").string();
    auto st = models::MakeRandomModelDirectory(
        models_dir, 1, (SharedDir() / "models" / "community-1-plda").string());
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::string audio_path = absl::GetFlag(FLAGS_audio);
  if (audio_path.empty()) {
    audio_path =
        (SharedDir() / "data" / "pyannote-audio" / "sample" / "sample.wav")
            .string();
  }
  auto wave = audio::DecodeFilePath(audio_path);
  if (!wave.ok()) {
    std::fprintf(stderr, "%s\n", wave.status().ToString().c_str());
    return 1;
  }
  auto dir = models::ModelDirectory::Open(models_dir);
  if (!dir.ok()) {
    std::fprintf(stderr, "%s\n", dir.status().ToString().c_str());
    return 1;
  }
  const int threads = absl::GetFlag(FLAGS_threads);
  models::CpuBackendOptions options{.threads = threads};
  if (absl::GetFlag(FLAGS_lstm_onednn)) {
    options.lstm = models::CpuLstmImpl::kOneDnnPrimitive;
  }
  auto backend = models::CreateCpuBackend(**dir, options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  const int batch = absl::GetFlag(FLAGS_batch);
  const int kW = models::kWindowSamples, kF = models::kFramesPerWindow;
  // `batch` windows at 1 s steps over the speech (wrapping around).
  std::vector<float> windows(static_cast<size_t>(batch) * kW);
  const size_t n = wave->samples.size();
  for (int i = 0; i < batch; ++i) {
    for (int j = 0; j < kW; ++j) {
      windows[static_cast<size_t>(i) * kW + j] =
          wave->samples[(16000ull * i + j) % n];
    }
  }
  std::vector<float> log_probs(static_cast<size_t>(batch) * kF * 7);
  std::vector<float> masks(static_cast<size_t>(batch) * 3 * kF, 0.0f);
  for (int i = 0; i < batch; ++i)
    for (int s = 0; s < 3; ++s)
      for (int f = 0; f < kF; ++f)
        masks[(static_cast<size_t>(i) * 3 + s) * kF + f] =
            ((f / 100) % 3 == s) ? 1.0f : 0.0f;
  std::vector<float> embeddings(static_cast<size_t>(batch) * 3 * 256);

  const std::string only = absl::GetFlag(FLAGS_only);
  // Best wall time per window; the mean process CPU time (all threads) per
  // window goes to *cpu (a load-independent cost on a shared machine).
  auto time_best = [&](auto&& fn, double* cpu) {
    fn();  // warm-up (primitive creation, page faults)
    double best = 1e30;
    const int repeats = absl::GetFlag(FLAGS_repeats);
    const double c0 = ProcessCpuSeconds();
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      fn();
      best = std::min(best,
                      std::chrono::duration<double>(Clock::now() - t0).count());
    }
    *cpu = (ProcessCpuSeconds() - c0) / repeats / batch;
    return best / batch;  // per window
  };
  double seg = 0, emb = 0, seg_cpu = 0, emb_cpu = 0;
  if (only != "emb") {
    seg = time_best(
        [&] {
          auto st = backend->segmentation->Run(windows, batch, log_probs);
          if (!st.ok()) std::abort();
        },
        &seg_cpu);
  }
  if (only != "seg") {
    emb = time_best(
        [&] {
          auto st =
              backend->embedding->Run(windows, batch, masks, 3, embeddings);
          if (!st.ok()) std::abort();
        },
        &emb_cpu);
  }
  std::printf(
      "cpu networks (%s), batch %d: segmentation %.1f ms/window, embedding "
      "(trunk once + 3 masks) %.1f ms/window\n"
      "network time per minute of audio (60 windows): segmentation %.2f s + "
      "embedding %.2f s = %.2f s (RTFx %.1f)\n",
      backend->description.c_str(), batch, seg * 1e3, emb * 1e3, 60 * seg,
      60 * emb, 60 * (seg + emb), 60.0 / (60 * (seg + emb)));
  // Machine-readable line for compare_pytorch.sh.
  std::printf(
      "RESULT impl=cpp threads=%d batch=%d seg_ms=%.3f emb_ms=%.3f "
      "seg_cpu_ms=%.3f emb_cpu_ms=%.3f\n",
      threads, batch, seg * 1e3, emb * 1e3, seg_cpu * 1e3, emb_cpu * 1e3);
  return 0;
}
