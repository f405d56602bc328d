// End-to-end RTFx of the CUDA backend on one GPU: about an hour of real
// speech (the fixture recordings concatenated until --hours is reached),
// 10 s windows at pyannote's 1 s step → segmentation (GPU) → powerset and
// embedding masks (host) → embeddings, 3 masks per window (GPU) → PLDA, AHC,
// VBx, reconstruction (host). Prints RTFx, the time of every stage, the
// arena's ledger and peak, and cudaMemGetInfo.
//
//   rtfx_main --data DIR --plda DIR [--models DIR] [--hours 1]
//             [--batch 32] [--embedding_precision fp32|tf32] [--graphs]
//
// Without --models, deterministic random weights (seed 1) are written to a
// temporary model directory: the networks' cost does not depend on the
// weights' values, and the real ones are gated. Depends on CUDA libraries and
// the engine only (no gRPC), so it runs on a bare GPU machine.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/audio/audio.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda_backend.h"
#include "engine/models/model_dir.h"
#include "engine/models/random_model.h"
#include "engine/pipeline/chunks.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/embedding_masks.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/powerset.h"

ABSL_FLAG(std::string, data, "", "Golden data folder (../shared/data).");
ABSL_FLAG(std::string, files,
          "findit-dia-parity/02_pyannote_sample/clip_16k.wav,"
          "findit-dia-parity/03_dual_speaker/clip_16k.wav,"
          "findit-dia-parity/05_four_speaker/clip_16k.wav,"
          "speakrs-fixtures/test_3speakers.wav,"
          "pyannote-audio/tests-data/dev00.wav",
          "Comma-separated recordings (relative to --data) to concatenate.");
ABSL_FLAG(std::string, models, "", "Model directory; empty = random weights.");
ABSL_FLAG(std::string, plda, "",
          "Folder with xvec_transform.npz and plda.npz "
          "(for the random model directory).");
ABSL_FLAG(double, hours, 1.0, "Audio length to build, in hours.");
ABSL_FLAG(int, batch, 32, "Windows per network launch.");
ABSL_FLAG(int, device, 0, "CUDA device ordinal.");
ABSL_FLAG(std::string, embedding_precision, "fp32", "fp32 or tf32.");
ABSL_FLAG(bool, graphs, true, "Replay CUDA graphs per batch shape.");
ABSL_FLAG(
    bool, timed_algos, false,
    "Time cuDNN's convolution algorithms once per shape (else heuristics).");
ABSL_FLAG(int, repeats, 2, "Timed passes (after one warm-up pass).");

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double GiB(uint64_t b) { return b / 1073741824.0; }

struct Times {
  double segmentation = 0, masks = 0, embedding = 0, clustering = 0;
  double total() const { return segmentation + masks + embedding + clustering; }
};

absl::Status Run() {
  using namespace diarization;
  namespace fs = std::filesystem;
  const std::string data = absl::GetFlag(FLAGS_data);
  if (data.empty()) return absl::InvalidArgumentError("--data is required");

  // 1. Audio: concatenate the recordings until the requested length.
  std::vector<float> samples;
  const size_t target =
      static_cast<size_t>(absl::GetFlag(FLAGS_hours) * 3600.0 * 16000.0);
  std::vector<std::vector<float>> sources;
  for (const std::string& f : std::vector<std::string>(
           absl::StrSplit(absl::GetFlag(FLAGS_files), ','))) {
    ASSIGN_OR_RETURN(audio::Waveform w,
                     audio::DecodeFilePath((fs::path(data) / f).string()));
    sources.push_back(std::move(w.samples));
  }
  while (samples.size() < target) {
    for (const auto& s : sources) {
      const size_t take = std::min(s.size(), target - samples.size());
      samples.insert(samples.end(), s.begin(), s.begin() + take);
      if (samples.size() >= target) break;
    }
  }
  const double audio_s = samples.size() / 16000.0;

  // 2. Models.
  std::string models_dir = absl::GetFlag(FLAGS_models);
  if (models_dir.empty()) {
    models_dir = (fs::temp_directory_path() / "rtfx_random_models").string();
    RETURN_IF_ERROR(models::MakeRandomModelDirectory(
        models_dir, 1, absl::GetFlag(FLAGS_plda)));
  }
  ASSIGN_OR_RETURN(auto dir, models::ModelDirectory::Open(models_dir));
  ASSIGN_OR_RETURN(pipeline::PldaModel plda,
                   pipeline::LoadPlda(dir->plda_dir()));
  const int batch = absl::GetFlag(FLAGS_batch);
  models::CudaBackendOptions opt;
  opt.arena.budget_bytes = size_t{64} << 30;
  opt.segmentation.max_batch = batch;
  opt.segmentation.use_cuda_graphs = absl::GetFlag(FLAGS_graphs);
  opt.segmentation.timed_conv_algorithms = absl::GetFlag(FLAGS_timed_algos);
  opt.embedding = opt.segmentation;
  opt.embedding.precision = absl::GetFlag(FLAGS_embedding_precision);
  const auto t_load = Clock::now();
  ASSIGN_OR_RETURN(
      models::CudaBackend backend,
      models::CreateCudaBackend(*dir, absl::GetFlag(FLAGS_device), opt));
  const double load_s = Since(t_load);

  const pipeline::PipelineConfig config = pipeline::PipelineConfig::Accurate();
  const pipeline::ChunkLayout layout =
      pipeline::ComputeChunks(static_cast<int64_t>(samples.size()), config);
  const int num_chunks = layout.num_chunks;
  constexpr int kW = models::kWindowSamples, kF = models::kSegmentationFrames;
  auto fill = [&](int first, int count, std::vector<float>& w) {
    w.assign(static_cast<size_t>(count) * kW, 0.0f);
    for (int i = 0; i < count; ++i) {
      const int64_t start = layout.chunk_start(first + i);
      const int64_t end = std::min<int64_t>(start + kW, samples.size());
      if (end > start)
        std::copy(samples.begin() + start, samples.begin() + end,
                  w.begin() + size_t(i) * kW);
    }
  };

  std::vector<float> log_probs(size_t(num_chunks) * kF *
                               models::kPowersetClasses);
  std::vector<float> segmentations(size_t(num_chunks) * kF * 3);
  std::vector<float> embeddings(size_t(num_chunks) * 3 * models::kEmbeddingDim);
  std::vector<float> windows;
  size_t min_free = SIZE_MAX;
  auto sample_free = [&] {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) == cudaSuccess) min_free = std::min(min_free, f);
  };

  auto pass = [&](Times& t, size_t* speakers) -> absl::Status {
    auto t0 = Clock::now();
    for (int first = 0; first < num_chunks; first += batch) {
      const int n = std::min(batch, num_chunks - first);
      fill(first, n, windows);
      RETURN_IF_ERROR(backend.segmentation->Run(
          windows, n,
          std::span<float>(log_probs).subspan(
              size_t(first) * kF * models::kPowersetClasses,
              size_t(n) * kF * models::kPowersetClasses)));
    }
    t.segmentation += Since(t0);
    sample_free();
    t0 = Clock::now();
    pipeline::PowersetToMultilabel(log_probs, segmentations);
    const std::vector<float> masks =
        pipeline::EmbeddingMasks(segmentations, num_chunks, config);
    t.masks += Since(t0);
    t0 = Clock::now();
    for (int first = 0; first < num_chunks; first += batch) {
      const int n = std::min(batch, num_chunks - first);
      fill(first, n, windows);
      RETURN_IF_ERROR(backend.embedding->Run(
          windows, n,
          std::span<const float>(masks).subspan(size_t(first) * 3 * kF,
                                                size_t(n) * 3 * kF),
          3,
          std::span<float>(embeddings)
              .subspan(size_t(first) * 3 * models::kEmbeddingDim,
                       size_t(n) * 3 * models::kEmbeddingDim)));
    }
    t.embedding += Since(t0);
    sample_free();
    t0 = Clock::now();
    ASSIGN_OR_RETURN(pipeline::DiarizationOutput out,
                     pipeline::Diarize(segmentations, embeddings, num_chunks,
                                       plda, config, {}));
    t.clustering += Since(t0);
    *speakers = out.labels.size();
    return absl::OkStatus();
  };

  Times warm, timed;
  size_t speakers = 0;
  RETURN_IF_ERROR(pass(warm, &speakers));  // captures the CUDA graphs
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  for (int r = 0; r < repeats; ++r) RETURN_IF_ERROR(pass(timed, &speakers));
  auto avg = [&](double v) { return v / repeats; };

  // The fbank stage alone (eager, same batches), to split the embedding time.
  double fbank_s = 0;
  {
    std::vector<float> fb(size_t(batch) * 998 * 80);
    const auto t0 = Clock::now();
    for (int first = 0; first < num_chunks; first += batch) {
      const int n = std::min(batch, num_chunks - first);
      fill(first, n, windows);
      RETURN_IF_ERROR(backend.embedding->ComputeFbank(
          windows, n, std::span<float>(fb).first(size_t(n) * 998 * 80)));
    }
    fbank_s = Since(t0);
  }

  const models::CudaMemorySnapshot mem = backend.Memory();
  std::printf(
      "rtfx_main: %s, %.1f s of audio (%.2f h), %d windows, batch %d, "
      "embedding %s, "
      "graphs %s, conv algorithms %s, %zu speakers found\n",
      backend.description.c_str(), audio_s, audio_s / 3600, num_chunks, batch,
      backend.embedding->precision().c_str(),
      absl::GetFlag(FLAGS_graphs) ? "on" : "off",
      absl::GetFlag(FLAGS_timed_algos) ? "timed" : "heuristic", speakers);
  std::printf("  model load + arena: %.2f s; warm-up pass %.2f s\n", load_s,
              warm.total());
  std::printf(
      "  per pass (mean of %d): segmentation %.3f s, masks %.3f s, embeddings "
      "%.3f s, "
      "clustering %.3f s, total %.3f s\n",
      repeats, avg(timed.segmentation), avg(timed.masks), avg(timed.embedding),
      avg(timed.clustering), avg(timed.total()));
  std::printf(
      "  of the embeddings: fbank alone (eager, incl. host copies) %.3f s\n",
      fbank_s);
  std::printf(
      "  RTFx end to end %.1f; networks only (segmentation + embeddings) %.1f; "
      "segmentation %.1f; embeddings %.1f\n",
      audio_s / avg(timed.total()),
      audio_s / avg(timed.segmentation + timed.embedding),
      audio_s / avg(timed.segmentation), audio_s / avg(timed.embedding));
  std::printf(
      "  arena: reserved %.2f GiB (rung %d), mapped %.3f GiB (peak %.3f), used "
      "%.3f GiB "
      "(peak %.3f), external %.3f GiB\n",
      GiB(mem.arena.reserved_bytes), mem.arena.rung_index,
      GiB(mem.arena.mapped_bytes), GiB(mem.arena.peak_mapped_bytes),
      GiB(mem.arena.used_bytes), GiB(mem.arena.peak_used_bytes),
      GiB(mem.arena.external_bytes));
  std::printf(
      "  cudaMemGetInfo: total %.2f GiB, free now %.2f GiB, lowest free seen "
      "%.2f GiB "
      "(used by the whole process incl. context: %.2f GiB)\n",
      GiB(mem.device_total_bytes), GiB(mem.device_free_bytes), GiB(min_free),
      GiB(mem.device_total_bytes - min_free));
  std::printf("%s", backend.arena->DebugString().c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "rtfx_main: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
