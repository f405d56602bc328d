// Options of the CUDA networks (one per model instance), and the knobs only
// the kernels' own harnesses turn (CudaHarnessOptions).
//
// Every field here is a production choice the service's flags reach
// (engine/runtime/backend_flags.h names each flag after its field). Variants
// that lost their measurements were deleted with their code paths (ADR
// 0092): FP16 "mixed" precision, conv_api "fastest", the unfused trunk,
// NCHW activations under TF32, the high-priority stream, the "pools"
// segmentation layout, the cuDNN SincNet path; the graph path's private
// workspaces and layer fence and the cooperative launch token are fixed
// behaviour. The H200 round of 2026-12-05 (ADR 0093) deleted the direct
// stem, the embedding workspace flag and the first segmentation batch, and
// made the segmentation's 1-D convolutions on kernels/conv1d_pool fixed
// behaviour (the cuDNN path of those two layers deleted).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_OPTIONS_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "engine/models/cuda/device_arena.h"

namespace diarization::models {

struct CudaModelOptions {
  // "fp32" or "tf32" (tf32 only for the embedding model; DESIGN.md). With
  // tf32 the ResNet activations are channels-last (NHWC), the layout cuDNN's
  // tensor-core kernels read without transposes; fp32 (FMA-only kernels)
  // runs NCHW, which is faster there.
  std::string precision = "fp32";
  // Windows per launch; device buffers are sized for this. Larger calls are
  // split, smaller ones run as they are (one CUDA graph per batch shape).
  int max_batch = 32;
  // Masks per window the buffers are sized for (embedding only); calls with
  // more masks run fewer windows per launch.
  int max_masks_per_window = 3;
  // Capture a CUDA graph per (batch, masks) shape on first use and replay it
  // afterwards. Off: every call enqueues the kernels one by one.
  bool use_cuda_graphs = true;
  // Convolution algorithms of the legacy cuDNN calls: false = cuDNN's
  // heuristics (reproducible choice); true = time the candidates once per
  // shape on the device (cudnnFindConvolutionForwardAlgorithmEx) and take
  // the fastest that meets the precision rules. Either way only
  // deterministic algorithms, and in FP32 no FFT/Winograd.
  bool timed_conv_algorithms = false;
  // cuDNN convolution workspace, from the arena.
  size_t workspace_bytes = size_t{256} << 20;
  // Embedding only: the API the trunk's convolutions go through. BatchNorm
  // is always folded into each convolution's weights at load, and bias +
  // residual + ReLU run inside the convolution. "legacy":
  // cudnnConvolutionBiasActivationForward. "graph" (tf32 only): one cuDNN
  // graph per convolution and epilogue through the cuDNN frontend, each
  // layer's engine chosen at load for max_batch windows; shapes no graph
  // engine supports stay legacy
  // (engine/models/cuda/embedding/cudnn_graph_conv.h, ADR 0072); a call of
  // fewer windows runs padded to max_batch (ADR 0077). "auto" (default):
  // "graph" for tf32 in a binary built with the frontend, "legacy" otherwise
  // (ADR 0079).
  std::string conv_api = "auto";
  // With the graph API: a file that keeps the engine chosen per layer shape
  // across restarts (engine/models/cuda/embedding/conv_engine_cache.h): read at
  // load, so a shape chosen before builds that one engine instead of timing the
  // candidates, and written after each new choice. Entries of another GPU or
  // library version, and corrupt ones, are ignored with a diagnostic.
  // Empty: no cache.
  std::string conv_engine_cache;
  // With the graph API: host time per layer shape after which no further
  // candidate is built once one is (GraphConv2d::Options); 0:
  // ConvGraphBuildBudgetMs below. The runtime-compiled engines of the conv +
  // bias + add + ReLU layers (every block's conv2) take 0.15-1.6 s each to
  // build, so this, not the candidate count, decides how many of them are
  // timed.
  double conv_graph_build_budget_ms = 0;
  // Embedding only, tf32: the six 32-channel layer1 convolutions through the
  // project's wgmma kernel (kernels/conv3x3_c32.h, sm_90 only, and only
  // where kernels/qualification.json qualifies it for this device and
  // max_batch; other GPUs keep cuDNN) instead of cuDNN, whose engines ran
  // them at 19-25 % of the H200's TF32 peak (ADR 0084). Off: cuDNN
  // (conv_api) for every layer.
  bool layer1_conv_kernel = true;
  // Segmentation only: the BiLSTM recurrence kernel. "qualified": the
  // cluster kernel (kernels/lstm_cluster.h) for each batch size that
  // kernels/qualification.json qualifies on this device, the resident kernel
  // (kernels/lstm.h) otherwise, with the GPU's cooperative launch token held
  // around each batch that runs the cluster kernel; "cluster" / "resident":
  // that one for every batch (tests, benchmarks, the qualification harness).
  std::string lstm_kernel = "qualified";
};

// The CUDA backend of one pipeline on one GPU: its arena and both networks'
// options. engine/runtime/backend_flags.h fills it from the service's flags
// (the server, tools/diarize, bench/gpu/rtfx_main and bench/service_overhead/
// engine_direct all link that one module); CPU sibling: CpuBackendOptions
// (cpu_backend.h).
struct CudaBackendOptions {
  // The arena of the device (its `device` field is overwritten by the
  // ordinal passed to CreateCudaBackend).
  DeviceArenaOptions arena;
  // Segmentation is FP32 only. Its convolutions after the SincNet filter
  // bank (80→60 and 60→60, kernel 5) need far less cuDNN workspace than the
  // ResNet's.
  // Its batch: the engine's default segmentation batch on CUDA (engine.h;
  // engine/runtime/devices_test checks they agree).
  CudaModelOptions segmentation = {.max_batch = 128,
                                   .workspace_bytes = size_t{64} << 20};
  // TF32 by default (docs/adr/0062-tf32-embedding-default.md): embeddings
  // within 5.2e-4 relative of FP32, and the same final RTTM on every fixture.
  CudaModelOptions embedding = {.precision = "tf32"};
};

// Knobs that only the kernels' own tests and harnesses (bench/qualify, the
// CUDA model tests) turn; production runs the defaults. Passed apart from
// CudaModelOptions (CudaEmbeddingModel::Create, CudaSegmentationModel::
// Create, CreateCudaBackend) so that no service flag reaches them.
struct CudaHarnessOptions {
  // With layer1_conv_kernel: whether the kernel qualification record
  // (kernels/qualification.json, kernels/qualification.h) must qualify the
  // kernel on this device at max_batch, for both layer forms (production;
  // otherwise cuDNN, with the reason logged). False runs it wherever the GPU
  // supports it: the kernel's own tests and benchmarks, and a kernel edited
  // since its record.
  bool layer1_conv_kernel_needs_record = true;
  // With layer1_conv_kernel: the kernel's tile form, by
  // kernels::Conv3x3C32TileName (empty: the kernel's default).
  std::string layer1_conv_tile;
  // With lstm_kernel = "cluster": at index n, the cluster kernel's windows
  // per cluster for batches of n (0 or past the end: the kernel's default).
  // The qualification harness passes the groups it just measured; with
  // "qualified" the record's groups are used and this is ignored.
  std::vector<int> lstm_cluster_groups;
  // Share of the device's co-resident clusters one cluster-LSTM launch may
  // take (kernels/lstm_cluster.h); the rest stays free for other work.
  double lstm_device_share = 0.5;
  // Segmentation only: the activation layout (cuda_segmentation_layout.h).
  // "packed" is the model's; "separate" (nothing shared) is the reference
  // the GPU test compares it with, bit for bit.
  std::string segmentation_activations = "packed";
  // The graph API's candidate search (GraphConv2d::Options). Runtime
  // compilation: time the engines cuDNN compiles at run time (NVRTC) with
  // the precompiled ones. Candidates built and timed per layer shape.
  bool conv_graph_runtime_compilation = true;
  int conv_graph_max_candidates = 8;
  // The same for the 1x1 shortcut convolutions: cuDNN's heuristics rank
  // engines that need ~245 MB of workspace first there, and the fastest
  // (the zero-workspace eng67 family, ~4x faster on layer3.0's shortcut on
  // an H200) comes only from the 9th candidate on. Three layers, so the
  // extra timing at load is small. 0: as conv_graph_max_candidates.
  int conv_graph_pointwise_candidates = 24;
  // The most workspace one candidate may need (0: the whole workspace).
  size_t conv_graph_workspace_cap_bytes = 0;
};

// The build budget per layer shape that `options` asks for. Its default
// (conv_graph_build_budget_ms = 0) depends on whether the choices are kept:
// without conv_engine_cache every load times the candidates again, so 1 s
// keeps a load short (only the first one or two runtime-compiled conv2
// engines are timed); with the cache the timing is a one-off per GPU and
// library version, so 30 s lets all max_candidates of them be timed. On an
// H200 that picked layer3's conv2 engine at 0.163-0.171 ms instead of
// 0.19 ms (-2.7 % of the embeddings per audio hour, docs/benchmarks.md),
// for about 30 s more at the first load.
inline double ConvGraphBuildBudgetMs(const CudaModelOptions& options) {
  if (options.conv_graph_build_budget_ms > 0) {
    return options.conv_graph_build_budget_ms;
  }
  return options.conv_engine_cache.empty() ? 1000.0 : 30000.0;
}

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_OPTIONS_H_
