// End-to-end RTFx of the CUDA backend on one GPU, in the server's
// configuration: about an hour of real speech (the fixture recordings
// concatenated until --hours is reached), 10 s windows at pyannote's step →
// segmentation (GPU) → powerset and embedding masks (host) → embeddings, 3
// masks per window (GPU) → PLDA, AHC, VBx, reconstruction (host). Prints the
// time of every stage, the arena's ledger and peak, cudaMemGetInfo, and last
// one JSON result line ({"bench": "rtfx_main", ...}) that summaries read.
//
//   rtfx_main --data DIR --plda DIR [--models DIR] [--hours 1]
//             [--mode accurate|fast] [--repeats 2] [backend flags]
//
// Its own flags are the workload's only (audio, length, mode, repeats); the
// backend is the server's: the same flags module
// (engine/runtime/backend_flags.h: --device, the batch sizes, --cuda_*),
// the same defaults, and the Device that engine/runtime/devices.h builds for
// the server, run through engine/runtime/offline_networks.h (the engine's
// window copy, model calls and host step; segmentation overlapped with the
// embeddings as Device::concurrent_stages says). A start-up option such as
// --cuda_conv_engine_cache is the server's flag, passed the same way.
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
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/audio/audio.h"
#include "engine/common/openblas_kernels.h"
#include "engine/common/status_macros.h"
#include "engine/io/plda_files.h"
#include "engine/models/cuda/cuda_backend.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_layout.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/windows.h"
#include "engine/runtime/backend_flags.h"
#include "engine/runtime/devices_cuda.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/offline_networks.h"

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
ABSL_FLAG(double, hours, 1.0,
          "Audio length to build, in hours; 0 = the files once, unrepeated.");
ABSL_FLAG(std::string, rttm_out, "",
          "If set, write the last pass's RTTM (regular view) to this file.");
ABSL_FLAG(std::string, uri, "clip_16k", "RTTM file id for --rttm_out.");
ABSL_FLAG(int, repeats, 2, "Timed passes (after one warm-up pass).");
ABSL_FLAG(std::string, segmentation_weights, "",
          "Optional segmentation.safetensors that replaces the model "
          "directory's (real segmentation weights give realistic masks and "
          "so a realistic clustering workload; the random network's output "
          "is noise).");
ABSL_FLAG(std::string, mode, "accurate",
          "accurate (pyannote's 1 s window step) or fast (2 s, 10 VBx "
          "iterations): the service's two quality modes.");

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double GiB(uint64_t b) { return b / 1073741824.0; }
double MiB(uint64_t b) { return b / 1048576.0; }

// Where the arena goes: the segmentation's activation layout (its tensors,
// and its size at other batch sizes in each layout, computed from the
// layout), then every owner's live allocations as the arena holds them.
void PrintMemoryBreakdown(const diarization::models::DeviceArena& arena,
                          const diarization::models::CudaSegmentationModel& seg,
                          int seg_batch) {
  using diarization::models::SegmentationActivationLayout;
  const SegmentationActivationLayout& own = seg.activation_layout();
  std::printf("  segmentation %s\n", own.Describe().c_str());
  const auto sizes = arena.LiveAllocationSizes();
  const auto windows = sizes.find("segmentation/windows");
  size_t upload = 0;
  if (windows != sizes.end()) {
    for (size_t b : windows->second) upload += b;
  }
  std::printf(
      "  segmentation activations by batch (MiB; packed / separate; "
      "'segmentation/windows' adds %.3f MiB per window):",
      MiB(upload) / std::max(1, seg_batch));
  for (int n : {32, 64, 128, 160, 192, 256, 512}) {
    const char* sep = " ";
    std::printf(" %d:", n);
    for (const char* mode : {"packed", "separate"}) {
      auto l = SegmentationActivationLayout::Plan(mode, n);
      std::printf("%s%.0f", sep, l.ok() ? MiB(l->total_bytes()) : -1.0);
      sep = "/";
    }
  }
  std::printf("\n  arena allocations by owner (MiB, largest first):\n");
  for (const auto& [owner, v] : sizes) {
    std::string line;
    size_t small = 0, total = 0;
    int small_count = 0;
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      while (j < v.size() && v[j] == v[i]) ++j;
      total += v[i] * (j - i);
      if (v[i] < (size_t{1} << 20)) {
        small += v[i] * (j - i);
        small_count += static_cast<int>(j - i);
      } else {
        absl::StrAppend(&line, line.empty() ? "" : " + ",
                        j - i > 1 ? absl::StrCat(j - i, " x ") : "",
                        absl::StrFormat("%.2f", MiB(v[i])));
      }
      i = j;
    }
    if (small_count > 0) {
      absl::StrAppend(
          &line, line.empty() ? "" : " + ",
          absl::StrFormat("%d under 1 MiB (%.2f)", small_count, MiB(small)));
    }
    std::printf("    %-36s %9.2f = %s\n", owner.c_str(), MiB(total),
                line.c_str());
  }
}

struct Times {
  double segmentation = 0, masks = 0, embedding = 0, clustering = 0;
  // The segmentation summary (count, inactive and clean pairs), made by the
  // networks pass after its last segmentation batch: with overlapped stages on
  // the segmentation thread while the embeddings run, so inside networks_wall.
  double summary = 0;
  // With overlapped stages: wall time of the overlapped network stages.
  double networks_wall = 0;
  // The clustering's steps (DiarizationDetails, ClusteringTimes).
  double count = 0, filter = 0, ahc = 0, plda = 0, vbx = 0, assignment = 0,
         reconstruction = 0;
  // The AHC's split, and the passes whose linkage ran on the GPU.
  double ahc_pdist = 0, ahc_linkage = 0;
  int accelerated = 0;
  double total() const {
    return networks_wall > 0
               ? networks_wall + clustering
               : segmentation + masks + summary + embedding + clustering;
  }
  double networks() const {
    return networks_wall > 0 ? networks_wall : segmentation + embedding;
  }
};

absl::Status Run() {
  using namespace diarization;
  namespace fs = std::filesystem;
  const std::string data = absl::GetFlag(FLAGS_data);
  if (data.empty()) return absl::InvalidArgumentError("--data is required");

  // 1. Audio: concatenate the recordings until the requested length.
  std::vector<float> samples;
  size_t target =
      static_cast<size_t>(absl::GetFlag(FLAGS_hours) * 3600.0 * 16000.0);
  std::vector<std::vector<float>> sources;
  for (const std::string& f : std::vector<std::string>(
           absl::StrSplit(absl::GetFlag(FLAGS_files), ','))) {
    ASSIGN_OR_RETURN(audio::Waveform w,
                     audio::DecodeFilePath((fs::path(data) / f).string()));
    sources.push_back(std::move(w.samples));
  }
  if (absl::GetFlag(FLAGS_hours) <= 0) {
    target = 0;
    for (const auto& s : sources) target += s.size();
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
  ASSIGN_OR_RETURN(pipeline::PldaModel plda, io::LoadPlda(dir->plda_dir()));
  // The server's backend: its flags, its defaults (backend_flags.h).
  ASSIGN_OR_RETURN(const runtime::BackendFlags backend,
                   runtime::BackendFlagsFromCommandLine());
  const int batch = backend.embedding_batch_size;
  const int seg_batch = backend.segmentation_batch_size;
  ASSIGN_OR_RETURN(const runtime::DeviceSpec spec,
                   runtime::ParseDeviceSpec(backend.devices.device));
  if (spec.cpu || spec.cuda_ordinals.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", backend.devices.device,
                     ": rtfx_main measures one GPU; use cuda or cuda:N"));
  }
  const int ordinal = spec.cuda_ordinals.empty() ? 0 : spec.cuda_ordinals[0];
  const models::CudaBackendOptions& opt = backend.devices.cuda;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "accurate" && mode != "fast") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode=", mode, ": use accurate or fast"));
  }
  const auto t_load = Clock::now();
  std::unique_ptr<models::SafetensorsFile> seg_override;
  if (!absl::GetFlag(FLAGS_segmentation_weights).empty()) {
    ASSIGN_OR_RETURN(seg_override, models::SafetensorsFile::Open(absl::GetFlag(
                                       FLAGS_segmentation_weights)));
  }
  // Built as the service builds its devices (engine/runtime/devices.h).
  ASSIGN_OR_RETURN(
      runtime::CudaDeviceParts cuda,
      runtime::MakeCudaDeviceParts(*dir, ordinal,
                                   {.gpu_linkage = backend.devices.gpu_linkage},
                                   opt, seg_override.get()));
  runtime::Device& device = cuda.device;
  const bool overlap = device.concurrent_stages;
  const double load_s = Since(t_load);

  const pipeline::PipelineConfig config =
      mode == "fast" ? pipeline::PipelineConfig::Fast()
                     : pipeline::PipelineConfig::Accurate();
  const pipeline::WindowLayout layout =
      pipeline::ComputeWindows(static_cast<int64_t>(samples.size()), config);
  const int num_windows = layout.num_windows;
  size_t min_free = SIZE_MAX;
  auto sample_free = [&] {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) == cudaSuccess) min_free = std::min(min_free, f);
  };

  size_t train_embeddings = 0;
  int ahc_clusters = 0;
  std::vector<Segment> last_segments;
  // The clustering's linkage on this GPU (Device::linkage), as the
  // service's engine runs it.
  pipeline::AhcOptions ahc;
  ahc.accelerator = device.linkage.get();
  // One pass: the networks as the engine runs them (engine/runtime/
  // offline_networks.h: the worker's window copy, RunSpans and host step,
  // overlapped as the Device's concurrent stages), then the host pipeline.
  auto pass = [&](Times& t, size_t* speakers) -> absl::Status {
    ASSIGN_OR_RETURN(
        runtime::OfflineNetworksOutput nets,
        runtime::RunOfflineNetworks(device, samples, config,
                                    {.segmentation_batch_size = seg_batch,
                                     .embedding_batch_size = batch,
                                     .concurrent_stages = overlap}));
    sample_free();
    t.segmentation += nets.segmentation_s;
    t.masks += nets.masks_s;
    t.summary += nets.summary_s;
    t.embedding += nets.embedding_s;
    if (overlap) t.networks_wall += nets.wall_s;
    auto t0 = Clock::now();
    ASSIGN_OR_RETURN(pipeline::DiarizationDetails d,
                     pipeline::DiarizeDetailed(
                         nets.segmentations, nets.embeddings, num_windows, plda,
                         config, {}, "", ahc, &nets.summary));
    t.clustering += Since(t0);
    t.count += d.count_s;
    t.filter += d.clustering.times.filter_s;
    t.ahc += d.clustering.times.ahc_s;
    t.ahc_pdist += d.clustering.times.ahc.pdist_s;
    t.ahc_linkage += d.clustering.times.ahc.linkage_s;
    t.accelerated += d.clustering.times.ahc.accelerated;
    t.plda += d.clustering.times.plda_s;
    t.vbx += d.clustering.times.vbx_s;
    t.assignment += d.clustering.times.assignment_s;
    t.reconstruction += d.reconstruction_s;
    *speakers = d.output.labels.size();
    last_segments = d.output.segments;
    train_embeddings = d.clustering.ahc_labels.size();
    ahc_clusters = d.clustering.ahc_labels.empty()
                       ? 0
                       : *std::max_element(d.clustering.ahc_labels.begin(),
                                           d.clustering.ahc_labels.end()) +
                             1;
    return absl::OkStatus();
  };

  Times warm, timed;
  size_t speakers = 0;
  RETURN_IF_ERROR(pass(warm, &speakers));  // captures the CUDA graphs
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  // Device time of the timed passes (CUDA events around every batch).
  const double seg_busy0 = cuda.segmentation->device_seconds();
  const double emb_busy0 = cuda.embedding->device_seconds();
  for (int r = 0; r < repeats; ++r) RETURN_IF_ERROR(pass(timed, &speakers));
  const double seg_busy =
      (cuda.segmentation->device_seconds() - seg_busy0) / repeats;
  const double emb_busy =
      (cuda.embedding->device_seconds() - emb_busy0) / repeats;
  auto avg = [&](double v) { return v / repeats; };

  // The fbank stage alone (eager, same batches), to split the embedding time.
  double fbank_s = 0;
  {
    runtime::RecordingWindows windows(samples, layout);
    std::vector<float> fb(size_t(batch) * 998 * 80);
    const auto t0 = Clock::now();
    for (int first = 0; first < num_windows; first += batch) {
      const int n = std::min(batch, num_windows - first);
      const std::vector<float> w =
          models::MaterializeWindows(windows.Batch(first, n));
      RETURN_IF_ERROR(cuda.embedding->ComputeFbank(
          w, n, std::span<float>(fb).first(size_t(n) * 998 * 80)));
    }
    fbank_s = Since(t0);
  }

  const models::CudaMemorySnapshot mem = cuda.backend->Memory();
  // What "auto" resolved to (ADR 0079): a graph trunk lists its engines.
  const bool graph_trunk = !cuda.embedding->conv_engines().empty();
  std::string conv_api = opt.embedding.conv_api;
  if (conv_api == "auto") conv_api += graph_trunk ? " = graph" : " = legacy";
  std::printf(
      "rtfx_main: %s, %.1f s of audio (%.2f h), %d windows, batch %d "
      "(segmentation %d), embedding %s (%s, conv api "
      "%s%s), %s, %s mode, %zu speakers found\n",
      device.description.c_str(), audio_s, audio_s / 3600, num_windows, batch,
      seg_batch, device.embedding->precision().c_str(),
      opt.embedding.precision != "fp32" ? "NHWC" : "NCHW", conv_api.c_str(),
      cuda.embedding->layer1_kernel() ? ", layer1 kernel" : "",
      overlap ? "stages overlapped" : "stages in sequence", mode.c_str(),
      speakers);
  std::printf("  backend: %s\n",
              runtime::DescribeBackendFlags(backend).c_str());
  std::printf("  model load + arena: %.2f s; warm-up pass %.2f s\n", load_s,
              warm.total());
  std::printf("  embedding cuDNN workspace %zu MiB\n",
              opt.embedding.workspace_bytes >> 20);
  if (!opt.embedding.conv_engine_cache.empty()) {
    std::printf("  conv engine cache %s (as found at the load)\n",
                opt.embedding.conv_engine_cache.c_str());
  }
  std::printf(
      "  clustering input: %zu training embeddings, %d AHC clusters "
      "(segmentation weights: %s)\n",
      train_embeddings, ahc_clusters,
      seg_override ? "given file" : "model directory");
  std::printf(
      "  per pass (mean of %d): segmentation %.3f s, masks %.3f s, "
      "segmentation summary %.3f s, embeddings %.3f s, "
      "clustering %.3f s, total %.3f s (networks wall %.3f s)\n",
      repeats, avg(timed.segmentation), avg(timed.masks), avg(timed.summary),
      avg(timed.embedding), avg(timed.clustering), avg(timed.total()),
      avg(timed.networks()));
  std::printf(
      "  of the clustering: count %.3f s, training set %.3f s, AHC %.3f s, "
      "PLDA %.3f s, VBx %.3f s, assignment %.3f s, reconstruction %.3f s\n",
      avg(timed.count), avg(timed.filter), avg(timed.ahc), avg(timed.plda),
      avg(timed.vbx), avg(timed.assignment), avg(timed.reconstruction));
  std::printf(
      "  of the AHC: distances %.3f s, linkage + fcluster %.3f s (linkage on "
      "the %s in %d of %d passes)\n",
      avg(timed.ahc_pdist), avg(timed.ahc_linkage),
      ahc.accelerator ? "GPU" : "host", timed.accelerated, repeats);
  if (device.linkage != nullptr) {
    std::printf("  %s (every call of the run, warm-up included)\n",
                device.linkage->Describe().c_str());
  }
  std::printf(
      "  of the embeddings: fbank alone (eager, incl. host copies) %.3f s\n",
      fbank_s);
  std::printf(
      "  device busy per pass (CUDA events per batch): segmentation %.3f s "
      "(%.0f %% of its wall), embeddings %.3f s (%.0f %% of its wall)\n",
      seg_busy, 100.0 * seg_busy / std::max(1e-9, avg(timed.segmentation)),
      emb_busy, 100.0 * emb_busy / std::max(1e-9, avg(timed.embedding)));
  std::printf(
      "  RTFx end to end %.1f; networks only (segmentation + embeddings) %.1f; "
      "segmentation %.1f; embeddings %.1f\n",
      audio_s / avg(timed.total()), audio_s / avg(timed.networks()),
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
  std::printf("%s", cuda.backend->arena->DebugString().c_str());
  PrintMemoryBreakdown(*cuda.backend->arena, *cuda.segmentation, seg_batch);
  // conv_api graph: the engine of each trunk convolution.
  for (const std::string& line : cuda.embedding->conv_engines()) {
    std::printf("  %s\n", line.c_str());
  }
  // The result line (bench/gpu/result_lines.py reads these).
  std::printf(
      "{\"bench\": \"rtfx_main\", \"mode\": \"%s\", \"device\": \"%s\", "
      "\"audio_s\": %.3f, \"repeats\": %d, \"rtfx\": %.2f, "
      "\"networks_rtfx\": %.2f, \"segmentation_rtfx\": %.2f, "
      "\"embedding_rtfx\": %.2f, \"load_s\": %.3f, \"speakers\": %zu, "
      "\"arena_peak_bytes\": %llu, \"backend\": \"%s\"}\n",
      mode.c_str(), device.description.c_str(), audio_s, repeats,
      audio_s / avg(timed.total()), audio_s / avg(timed.networks()),
      audio_s / avg(timed.segmentation), audio_s / avg(timed.embedding), load_s,
      speakers, static_cast<unsigned long long>(mem.arena.peak_used_bytes),
      runtime::DescribeBackendFlags(backend).c_str());
  if (const std::string out = absl::GetFlag(FLAGS_rttm_out); !out.empty()) {
    std::ofstream f(out);
    f << FormatRttm(last_segments, absl::GetFlag(FLAGS_uri));
    if (!f) return absl::InternalError("cannot write " + out);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // First: it may execute the binary again (engine/common/openblas_kernels.h).
  const std::string openblas = diarization::ReexecWithOpenBlasKernels(argv);
  absl::ParseCommandLine(argc, argv);
  std::printf("%s\n", openblas.c_str());
  const absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "rtfx_main: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
