// End-to-end RTFx of the CUDA backend on one GPU: about an hour of real
// speech (the fixture recordings concatenated until --hours is reached),
// 10 s windows at pyannote's 1 s step → segmentation (GPU) → powerset and
// embedding masks (host) → embeddings, 3 masks per window (GPU) → PLDA, AHC,
// VBx, reconstruction (host). Prints RTFx, the time of every stage, the
// arena's ledger and peak, and cudaMemGetInfo.
//
//   rtfx_main --data DIR --plda DIR [--models DIR] [--hours 1]
//             [--batch 32] [--seg_batch N] [--embedding_precision fp32|tf32]
//             [--graphs] [--overlap]
//
// The networks run through engine/runtime/offline_networks.h on the Device
// that engine/runtime/devices.h builds, i.e. the engine's own window copy,
// model calls and host step. --overlap runs segmentation (and each window's
// masks) on its own thread (its own stream) while the main thread embeds
// the windows segmented so far, as the engine does with
// Device::concurrent_stages.
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
#include "engine/models/cuda_backend.h"
#include "engine/models/cuda_segmentation_layout.h"
#include "engine/models/model_dir.h"
#include "engine/models/random_model.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/plda.h"
#include "engine/pipeline/windows.h"
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
ABSL_FLAG(int, batch, 32, "Windows per network launch.");
ABSL_FLAG(int, device, 0, "CUDA device ordinal.");
ABSL_FLAG(std::string, embedding_precision, "tf32",
          "fp32 or tf32 (the service's default, ADR 0062).");
ABSL_FLAG(bool, graphs, true, "Replay CUDA graphs per batch shape.");
ABSL_FLAG(
    bool, timed_algos, false,
    "Time cuDNN's convolution algorithms once per shape (else heuristics).");
ABSL_FLAG(int, repeats, 2, "Timed passes (after one warm-up pass).");
ABSL_FLAG(std::string, segmentation_weights, "",
          "Optional segmentation.safetensors that replaces the model "
          "directory's (real segmentation weights give realistic masks and "
          "so a realistic clustering workload; the random network's output "
          "is noise).");
ABSL_FLAG(int, seg_batch,
          diarization::runtime::EngineOptions().segmentation_batch_size,
          "Windows per segmentation launch (default: the engine's; 0: same as "
          "--batch).");
ABSL_FLAG(int, seg_first_batch, 0,
          "Windows in the pass's first segmentation launch (0: --seg_batch): "
          "with --overlap the embeddings start once that batch has its masks "
          "(runtime::OfflineNetworksOptions::first_segmentation_batch_size).");
ABSL_FLAG(int, embedding_workspace_mb, 0,
          "The embedding network's cuDNN workspace, MiB (0: the default, "
          "CudaModelOptions::workspace_bytes).");
ABSL_FLAG(bool, overlap, false,
          "Segment on a second thread while embedding the windows already "
          "segmented.");
ABSL_FLAG(bool, direct_conv1d, false,
          "Segmentation's two 1-D convolutions and their max-pool through "
          "kernels/conv1d_pool instead of cuDNN + a pooling kernel.");
ABSL_FLAG(std::string, conv_api, "auto",
          "Embedding trunk convolutions: auto (graph for tf32, else legacy; "
          "ADR 0079), "
          "legacy (cuDNN's cudnnConvolutionBiasActivationForward), graph "
          "(cuDNN graphs through the cuDNN frontend, engines chosen at load "
          "for the largest batch; TF32).");
ABSL_FLAG(bool, graph_runtime_compilation, true,
          "With --conv_api graph: time the engines cuDNN compiles at "
          "run time too (false: only where no precompiled engine builds; "
          "shorter first use of each shape).");
ABSL_FLAG(int, graph_max_candidates, 8,
          "With --conv_api graph: plans built and timed per layer "
          "shape.");
ABSL_FLAG(double, graph_build_budget_ms,
          diarization::models::CudaModelOptions().conv_graph_build_budget_ms,
          "With --conv_api graph: host milliseconds per layer shape "
          "after which no further candidate is built (once one is); 0: 1 s "
          "without --conv_engine_cache, 30 s with it "
          "(models::ConvGraphBuildBudgetMs).");
ABSL_FLAG(
    int, graph_pointwise_candidates,
    diarization::models::CudaHarnessOptions().conv_graph_pointwise_candidates,
    "With --conv_api graph: plans built and timed for the 1x1 "
    "shortcut convolutions (0: as --graph_max_candidates).");
ABSL_FLAG(int, graph_workspace_cap_mb, 0,
          "With --conv_api graph: the most workspace a graph engine "
          "may need, MiB (0: the whole workspace, 256 MiB).");
ABSL_FLAG(std::string, conv_engine_cache, "",
          "With --conv_api graph: the file that keeps the engine "
          "chosen per layer shape (read at load, written after the choice); "
          "empty: none.");
ABSL_FLAG(bool, conv_engine_cache_reset, false,
          "Delete --conv_engine_cache before loading (a cold start).");
ABSL_FLAG(bool, direct_stem, false,
          "Embedding stem (one input channel) through kernels/stem_conv "
          "instead of cuDNN (TF32).");
ABSL_FLAG(bool, layer1_kernel, true,
          "The six 32-channel layer1 convolutions through kernels/conv3x3_c32 "
          "(TF32 tensor cores) instead of cuDNN (TF32).");
ABSL_FLAG(bool, layer1_needs_record, true,
          "With --layer1_kernel: run it only where kernels/qualification.json "
          "qualifies it (production's rule); false: wherever the GPU "
          "supports it.");
ABSL_FLAG(std::string, layer1_tile, "",
          "With --layer1_kernel: the kernel's tile form by name "
          "(kernels/conv3x3_c32.h Conv3x3C32TileName); empty: its default.");
ABSL_FLAG(bool, gpu_linkage, true,
          "The clustering's centroid linkage on the GPU "
          "(engine/models/cuda_linkage.h); false: on the host.");
ABSL_FLAG(std::string, lstm_kernel,
          diarization::models::CudaModelOptions().lstm_kernel,
          "Segmentation BiLSTM recurrence: qualified, cluster or resident.");
ABSL_FLAG(double, lstm_device_share,
          diarization::models::CudaHarnessOptions().lstm_device_share,
          "With the cluster kernel: share of the co-resident clusters one "
          "launch may take.");
ABSL_FLAG(int, lstm_cluster_group, 0,
          "With --lstm_kernel=cluster: windows per cluster for every batch "
          "size (1, 2, 4, 8, 16; 0: the kernel's default).");

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
  // networks pass after its last segmentation batch: with --overlap on the
  // segmentation thread while the embeddings run, so inside networks_wall.
  double summary = 0;
  // With --overlap: wall time of the overlapped network stages.
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
  const int batch = absl::GetFlag(FLAGS_batch);
  const int seg_batch = absl::GetFlag(FLAGS_seg_batch) > 0
                            ? absl::GetFlag(FLAGS_seg_batch)
                            : batch;
  const bool overlap = absl::GetFlag(FLAGS_overlap);
  models::CudaBackendOptions opt;
  models::CudaHarnessOptions harness;
  opt.arena.budget_bytes = size_t{64} << 30;
  for (models::CudaModelOptions* o : {&opt.segmentation, &opt.embedding}) {
    o->use_cuda_graphs = absl::GetFlag(FLAGS_graphs);
    o->timed_conv_algorithms = absl::GetFlag(FLAGS_timed_algos);
  }
  opt.segmentation.max_batch = seg_batch;
  opt.segmentation.direct_conv1d = absl::GetFlag(FLAGS_direct_conv1d);
  opt.segmentation.lstm_kernel = absl::GetFlag(FLAGS_lstm_kernel);
  harness.lstm_device_share = absl::GetFlag(FLAGS_lstm_device_share);
  if (const int g = absl::GetFlag(FLAGS_lstm_cluster_group); g > 0) {
    harness.lstm_cluster_groups.assign(seg_batch + 1, g);
  }
  opt.embedding.max_batch = batch;
  if (const int mb = absl::GetFlag(FLAGS_embedding_workspace_mb); mb > 0) {
    opt.embedding.workspace_bytes = size_t(mb) << 20;
  }
  opt.embedding.precision = absl::GetFlag(FLAGS_embedding_precision);
  opt.embedding.conv_api = absl::GetFlag(FLAGS_conv_api);
  opt.embedding.direct_stem_conv = absl::GetFlag(FLAGS_direct_stem);
  opt.embedding.layer1_conv_kernel = absl::GetFlag(FLAGS_layer1_kernel);
  harness.layer1_conv_tile = absl::GetFlag(FLAGS_layer1_tile);
  harness.layer1_conv_kernel_needs_record =
      absl::GetFlag(FLAGS_layer1_needs_record);
  harness.conv_graph_runtime_compilation =
      absl::GetFlag(FLAGS_graph_runtime_compilation);
  harness.conv_graph_max_candidates = absl::GetFlag(FLAGS_graph_max_candidates);
  harness.conv_graph_pointwise_candidates =
      absl::GetFlag(FLAGS_graph_pointwise_candidates);
  opt.embedding.conv_graph_build_budget_ms =
      absl::GetFlag(FLAGS_graph_build_budget_ms);
  harness.conv_graph_workspace_cap_bytes =
      size_t(std::max(0, absl::GetFlag(FLAGS_graph_workspace_cap_mb))) << 20;
  opt.embedding.conv_engine_cache = absl::GetFlag(FLAGS_conv_engine_cache);
  if (absl::GetFlag(FLAGS_conv_engine_cache_reset) &&
      !opt.embedding.conv_engine_cache.empty()) {
    std::error_code ec;
    fs::remove(opt.embedding.conv_engine_cache, ec);
  }
  const auto t_load = Clock::now();
  std::unique_ptr<models::SafetensorsFile> seg_override;
  if (!absl::GetFlag(FLAGS_segmentation_weights).empty()) {
    ASSIGN_OR_RETURN(seg_override, models::SafetensorsFile::Open(absl::GetFlag(
                                       FLAGS_segmentation_weights)));
  }
  // Built as the service builds its devices (engine/runtime/devices.h),
  // with the benchmark's backend options.
  ASSIGN_OR_RETURN(runtime::CudaDeviceParts cuda,
                   runtime::MakeCudaDeviceParts(
                       *dir, absl::GetFlag(FLAGS_device),
                       {.gpu_linkage = absl::GetFlag(FLAGS_gpu_linkage)}, opt,
                       seg_override.get(), harness));
  runtime::Device& device = cuda.device;
  const double load_s = Since(t_load);

  const pipeline::PipelineConfig config = pipeline::PipelineConfig::Accurate();
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
  // --overlap = the Device's concurrent stages), then the host pipeline.
  auto pass = [&](Times& t, size_t* speakers) -> absl::Status {
    ASSIGN_OR_RETURN(
        runtime::OfflineNetworksOutput nets,
        runtime::RunOfflineNetworks(device, samples, config,
                                    {.segmentation_batch_size = seg_batch,
                                     .embedding_batch_size = batch,
                                     .first_segmentation_batch_size =
                                         absl::GetFlag(FLAGS_seg_first_batch),
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
      "(segmentation %d, %s conv1d), embedding %s (%s, conv api "
      "%s%s%s%s), %s, "
      "graphs %s, conv algorithms %s, %zu speakers found\n",
      device.description.c_str(), audio_s, audio_s / 3600, num_windows, batch,
      seg_batch, opt.segmentation.direct_conv1d ? "direct" : "cuDNN",
      device.embedding->precision().c_str(),
      opt.embedding.precision != "fp32" ? "NHWC" : "NCHW", conv_api.c_str(),
      graph_trunk && harness.conv_graph_runtime_compilation
          ? ", runtime-compiled engines"
          : "",
      opt.embedding.direct_stem_conv ? ", direct stem" : "",
      cuda.embedding->layer1_kernel() ? ", layer1 kernel" : "",
      overlap ? "stages overlapped" : "stages in sequence",
      absl::GetFlag(FLAGS_graphs) ? "on" : "off",
      absl::GetFlag(FLAGS_timed_algos) ? "timed" : "heuristic", speakers);
  std::printf("  model load + arena: %.2f s; warm-up pass %.2f s\n", load_s,
              warm.total());
  std::printf(
      "  first segmentation batch %d windows; embedding cuDNN workspace %zu "
      "MiB\n",
      absl::GetFlag(FLAGS_seg_first_batch) > 0
          ? absl::GetFlag(FLAGS_seg_first_batch)
          : seg_batch,
      opt.embedding.workspace_bytes >> 20);
  if (!opt.embedding.conv_engine_cache.empty()) {
    std::printf("  conv engine cache %s (%s)\n",
                opt.embedding.conv_engine_cache.c_str(),
                absl::GetFlag(FLAGS_conv_engine_cache_reset)
                    ? "deleted before the load: a cold start"
                    : "as found at the load");
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
