#include "engine/models/cuda/embedding/cuda_embedding_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <numbers>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_busy_timer.h"
#include "engine/models/cuda/cuda_context.h"
#include "engine/models/cuda/cuda_graph_cache.h"
#include "engine/models/cuda/cuda_linear.h"
#include "engine/models/cuda/cuda_precision.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/cuda_window_upload.h"
#include "engine/models/cuda/embedding/conv_engine_cache.h"
#include "engine/models/cuda/embedding/cuda_conv2d.h"
#include "engine/models/cuda/embedding/cuda_fft.h"
#include "engine/models/cuda/embedding/cudnn_graph_conv.h"
#include "engine/models/fbank.h"
#include "engine/models/format/model_specs.h"
#include "engine/models/format/weights.h"
#include "kernels/conv3x3_c32.h"
#include "kernels/fbank.h"
#include "kernels/qualification.h"
#include "kernels/stats_pool.h"

namespace diarization::models {
namespace {

using cuda::Conv2d;
using cuda::CublasStatus;
using cuda::CudaContext;
using cuda::CudaStatus;
using cuda::DeviceBuffer;

using HP = ResNet34HyperParameters;
constexpr int kMel = kFbankMelBins;                   // 80
constexpr int kFrames = FbankFrames(kWindowSamples);  // 998
constexpr int kStem = HP::kBaseChannels;
constexpr int kFeat = HP::kStatsDim / 2;  // 256 channels × 10 rows
constexpr int kStats = HP::kStatsDim;
constexpr float kBnEps = HP::kBatchNormEps;
// The kernels' compile-time sizes (kernels/ does not include the shapes).
static_assert(kernels::kFbankMel == kFbankMelBins);
static_assert(kernels::kFbankFrameLength == kFbankWindowSamples);
static_assert(kernels::kFbankFrameShift == kFbankShiftSamples);
static_assert(kernels::kFbankBins == kFbankFftSize / 2 + 1);

// A conv followed by eval BatchNorm: the scale folded into the convolution
// weights at load (w'[k] = w[k]·scale[k]) and the shift applied as the
// convolution's bias inside the cuDNN kernel, so no pass over the
// activations remains. Folding moves each product by one
// float rounding of w·scale (the TF32 mode rounds the weights either way).
struct ConvBn {
  std::unique_ptr<Conv2d> conv;
  // conv_api "graph": the same layer (and weights) through a
  // cuDNN graph; null on the legacy path.
  std::unique_ptr<cuda::GraphConv2d> graph;
  DeviceBuffer shift;  // the convolution's bias
  std::vector<float> host_shift;
  // CudaModelOptions::layer1_conv_kernel: the folded weights packed for
  // kernels/conv3x3_c32.h; empty for every other layer (and then `graph`
  // or `conv` runs it). Such a layer gets no graph.
  DeviceBuffer c32_weights;
  kernels::Conv3x3C32Tile c32_tile = kernels::kConv3x3C32DefaultTile;
};

// The trunk's two calls, through the graph path where the layer has
// one.
absl::Status ConvForward(ConvBn& c, const void* x, int n, int h, int w,
                         void* y) {
  if (c.c32_weights.data() != nullptr) {
    return absl::InternalError(
        "a layer1 kernel layer was asked for a convolution without bias");
  }
  if (c.graph) return c.graph->Forward(x, n, h, w, y);
  return c.conv->Forward(x, n, h, w, y);
}
absl::Status ConvBiasRelu(ConvBn& c, const void* x, int n, int h, int w,
                          const void* bias, const void* z, void* y,
                          cudaStream_t stream) {
  if (c.c32_weights.data() != nullptr) {
    return kernels::LaunchConv3x3C32Tf32(
        {.x = static_cast<const float*>(x),
         .packed_weights = c.c32_weights.f32(),
         .bias = static_cast<const float*>(bias),
         .residual = static_cast<const float*>(z),
         .y = static_cast<float*>(y),
         .n = n,
         .h = h,
         .w = w,
         .relu = true,
         .tile = c.c32_tile},
        stream);
  }
  if (c.graph) return c.graph->ForwardBiasRelu(x, n, h, w, bias, z, y);
  return c.conv->ForwardBiasRelu(x, n, h, w, bias, z, y);
}

struct Block {
  ConvBn conv1, conv2;
  std::optional<ConvBn> shortcut;
  // With a shortcut: conv2's bias plus the shortcut's (the residual
  // add is linear, so the 1×1 shortcut convolution runs without a bias).
  DeviceBuffer conv2_bias_with_shortcut;
};

absl::StatusOr<ConvBn> LoadConvBn(
    CudaContext* ctx, const SafetensorsFile& w, const std::string& conv_name,
    const std::string& bn, Conv2d::Shape shape, bool channels_last,
    bool c32_kernel = false,
    kernels::Conv3x3C32Tile c32_tile = kernels::kConv3x3C32DefaultTile) {
  shape.channels_last = channels_last;
  ASSIGN_OR_RETURN(std::vector<float> weight,
                   ReadF32(w, conv_name + ".weight",
                           {shape.out_channels, shape.in_channels,
                            shape.kernel_h, shape.kernel_w}));
  const int c = shape.out_channels;
  ASSIGN_OR_RETURN(std::vector<float> gamma, ReadF32(w, bn + ".weight", {c}));
  ASSIGN_OR_RETURN(std::vector<float> beta, ReadF32(w, bn + ".bias", {c}));
  ASSIGN_OR_RETURN(std::vector<float> mean,
                   ReadF32(w, bn + ".running_mean", {c}));
  ASSIGN_OR_RETURN(std::vector<float> var,
                   ReadF32(w, bn + ".running_var", {c}));
  // torch's CPU eval BatchNorm: alpha = invstd·γ, beta = β − mean·alpha, in
  // float.
  std::vector<float> scale(c), shift(c);
  for (int i = 0; i < c; ++i) {
    const float invstd = 1.0f / std::sqrt(var[i] + kBnEps);
    scale[i] = invstd * gamma[i];
    shift[i] = beta[i] - mean[i] * scale[i];
  }
  {
    const int64_t per_out = static_cast<int64_t>(weight.size()) / c;
    for (int k = 0; k < c; ++k) {
      for (int64_t j = 0; j < per_out; ++j) weight[k * per_out + j] *= scale[k];
    }
  }
  const std::string owner = ctx->owner() + "/weights";
  ConvBn out;
  ASSIGN_OR_RETURN(out.conv, Conv2d::Create(ctx, shape, weight, owner));
  if (c32_kernel) {
    ASSIGN_OR_RETURN(std::vector<float> packed,
                     kernels::PackConv3x3C32Weights(weight, c32_tile));
    out.c32_tile = c32_tile;
    ASSIGN_OR_RETURN(out.c32_weights,
                     DeviceBuffer::FromHost(ctx->arena(), packed, owner));
  }
  ASSIGN_OR_RETURN(out.shift,
                   DeviceBuffer::FromHost(ctx->arena(), shift, owner));
  out.host_shift = std::move(shift);
  return out;
}

}  // namespace

struct CudaEmbeddingModel::Impl {
  CudaModelOptions options;
  CudaHarnessOptions harness;
  cuda::Precision precision = cuda::Precision::kFp32;
  // NHWC activations: only with TF32, where cuDNN's tensor-core kernels
  // want them; its FMA-only FP32 kernels ran 2x slower in NHWC than in NCHW
  // on the H200 (docs/benchmarks.md).
  bool channels_last = false;
  // CudaModelOptions::conv_api resolved to "graph".
  //
  // Graph API: the engines are chosen and built for max_batch windows only,
  // at load, and every call runs the trunk at max_batch on them (the rows
  // past its windows zeroed). So no request pays a plan build (cuDNN
  // compiles the conv2 layers' engines at run time: 0.2-1.1 s per layer and
  // batch size, docs/benchmarks.md 16:27), and the layers' legacy calls
  // never run between graph plans. Configurations that did (small batches
  // on the legacy call), or that shared one plan between layers or timed
  // 24 candidates, gave wrong embeddings on some loads on the H200
  // (2026-12-01, 0.02-0.4 relative); cause not isolated (ADR 0077).
  bool graph_api = false;
  // CudaModelOptions::layer1_conv_kernel, where the trunk allows it (TF32).
  bool layer1_kernel = false;
  kernels::Conv3x3C32Tile layer1_tile = kernels::kConv3x3C32DefaultTile;
  // CudaModelOptions::conv_engine_cache, shared with the process's other
  // pipelines; null without one.
  std::shared_ptr<ConvEngineCache> engine_cache;
  // Declared first: destroyed last, after every buffer went back to it.
  std::shared_ptr<DeviceArena> arena_owner;
  DeviceArena* arena = nullptr;
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<cuda::GraphCache> graphs;

  // Weights.
  DeviceBuffer window, mel_banks;
  // The fbank's float64 DFT of every frame (512 points, 998 frames a window).
  std::unique_ptr<cuda::RealFftPlans> fft;
  ConvBn stem;
  std::vector<Block> blocks;
  std::unique_ptr<cuda::Linear> seg1;

  // Buffers for max_batch windows / max_batch × max_masks pairs.
  int max_pairs = 0;
  // Three activation buffers: the fbank's stages and the ResNet's rotating
  // (input, conv output, scratch) triple reuse them.
  DeviceBuffer audio, masks, act[3], stats, emb;
  // Two sets of the per-batch host staging, timers and uploaders, one per
  // batch in flight (StartSpans/FinishSpans: the next batch is staged while
  // the device runs the current one, and its audio crosses on the slot's
  // uploader's copy stream meanwhile). The other device buffers are shared:
  // the stream runs the batches one after the other.
  static constexpr int kSlots = 2;
  cuda::WindowUploader uploader[kSlots];
  cuda::BusyTimer busy[kSlots];
  cuda::PinnedBuffer host_masks[kSlots], host_emb[kSlots];
  // Batches started and not finished, oldest first.
  struct Started {
    int slot = 0;
    std::span<float> embeddings;
    absl::Status status;  // an error while enqueueing it
  };
  std::deque<Started> started;
  int next_slot = 0;

  // Enqueues windows [first, first + n) of `spans` on the stream with slot
  // `slot`'s staging; their embeddings land in host_emb[slot].
  absl::Status EnqueueChunk(int slot, const WindowSpans& spans, int first,
                            int n, std::span<const float> masks,
                            int masks_per_window);

  ~Impl() {
    if (ctx) cudaStreamSynchronize(ctx->stream());
    graphs.reset();
  }

  absl::Status EnqueueFbank(int n);
  // conv_api "graph": a GraphConv2d over every trunk layer.
  absl::Status AttachGraphConvs();
  // options.conv_engine_cache: opens the process's cache for that file and
  // reports what it holds for this GPU; without a usable file (unreadable,
  // no device properties) the engines are chosen anew, never a failure.
  void OpenEngineCache();
  // Writes the cache when a choice was added; a failure is a diagnostic.
  void SaveEngineCache();
  // conv_api "graph": one eager trunk pass at max_batch on
  // zeroed buffers, so every layer's engine is chosen at load (no request
  // pays it). Called by Create right after it zeroed the activations.
  absl::Status ChooseGraphEnginesAtLoad();
  // One stderr line: how many convolutions run on graph engines.
  void LogGraphConvs();
  std::vector<ConvBn*> Layers(std::vector<std::string>* names);
  std::vector<std::string> ConvEngines();
  absl::Status Enqueue(int n, int s);
  // input: the (n, 80, 998, 1) features, which may be a or b; cur, a, b: three
  // distinct activation buffers. On return *free_buf is a buffer not holding
  // the output. Under the graph API n must be max_batch (the engines are built
  // for it).
  absl::StatusOr<void*> EnqueueTrunkFused(int n, const void* input, void* cur,
                                          void* a, void* b, int* out_h,
                                          int* out_w, void** free_buf);
};

absl::Status CudaEmbeddingModel::Impl::EnqueueFbank(int n) {
  cudaStream_t stream = ctx->stream();
  const int64_t rows = int64_t{n} * kFrames;
  // Fbank. Buffer roles: act[2] frames (f64), act[1] spectrum (f64),
  // act[2] power (frames are dead), act[1] mel (the spectrum is dead),
  // act[0] features (n, 1, 80, 998), which is also NHWC with one channel.
  double* frames = act[2].f64();
  double* spectrum = act[1].f64();
  float* power = act[2].f32();
  float* mel = act[1].f32();
  float* feats = act[0].f32();
  RETURN_IF_ERROR(
      kernels::LaunchFbankFrames({.audio = audio.f32(),
                                  .window = window.f32(),
                                  .frames = frames,
                                  .batch = n,
                                  .samples_per_item = kWindowSamples,
                                  .frames_per_item = kFrames},
                                 stream));
  // Runs on fft->PlannedItems(n) >= n windows' frames: the rows past n hold
  // initialised data (the buffers are zeroed at load) and are never read.
  RETURN_IF_ERROR(fft->Forward(frames, n, spectrum));
  RETURN_IF_ERROR(kernels::LaunchFbankPower(spectrum, power, rows, stream));
  {
    // The mel product stays FP32 in every precision mode (the CPU does it in
    // float32; TF32 here would move quiet mel bands by ~1e-3).
    RETURN_IF_ERROR(
        CublasStatus(cublasSetMathMode(ctx->cublas(), CUBLAS_PEDANTIC_MATH),
                     "cublasSetMathMode"));
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_ERROR(
        CublasStatus(cublasSgemm(ctx->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, kMel,
                                 static_cast<int>(rows), kernels::kFbankBins,
                                 &one, mel_banks.f32(), kernels::kFbankBins,
                                 power, kernels::kFbankBins, &zero, mel, kMel),
                     "cublasSgemm (fbank mel)"));
    RETURN_IF_ERROR(CublasStatus(
        cublasSetMathMode(ctx->cublas(), precision == cuda::Precision::kFp32
                                             ? CUBLAS_PEDANTIC_MATH
                                             : CUBLAS_TF32_TENSOR_OP_MATH),
        "cublasSetMathMode"));
  }
  return kernels::LaunchFbankLogNormalize(mel, feats, n, kFrames, stream);
}

absl::StatusOr<void*> CudaEmbeddingModel::Impl::EnqueueTrunkFused(
    int n, const void* input, void* cur, void* free_a, void* free_b, int* out_h,
    int* out_w, void** free_buf) {
  int h = kMel, w = kFrames;
  // Stem: ReLU(conv'(x) + shift).
  RETURN_IF_ERROR(ConvBiasRelu(stem, input, n, h, w, stem.shift.data(), nullptr,
                               cur, ctx->stream()));
  // BasicBlock with three buffers: x (cur), t, and the output.
  for (Block& b : blocks) {
    const int oh = b.conv1.conv->OutH(h), ow = b.conv1.conv->OutW(w);
    void* t = free_a;
    RETURN_IF_ERROR(ConvBiasRelu(b.conv1, cur, n, h, w, b.conv1.shift.data(),
                                 nullptr, t, ctx->stream()));
    if (b.shortcut) {
      // s = conv_sc'(x) (its shift is in conv2's bias) into the third
      // buffer; x is dead after it, so the block's output goes there.
      void* sc = free_b;
      RETURN_IF_ERROR(ConvForward(*b.shortcut, cur, n, h, w, sc));
      RETURN_IF_ERROR(ConvBiasRelu(b.conv2, t, n, oh, ow,
                                   b.conv2_bias_with_shortcut.data(), sc, cur,
                                   ctx->stream()));
      free_a = t;
      free_b = sc;
    } else {
      // y = ReLU(conv2'(t) + shift2 + x) into the third buffer.
      void* y = free_b;
      RETURN_IF_ERROR(ConvBiasRelu(b.conv2, t, n, oh, ow, b.conv2.shift.data(),
                                   cur, y, ctx->stream()));
      free_a = t;
      free_b = cur;
      cur = y;
    }
    h = oh;
    w = ow;
  }
  *out_h = h;
  *out_w = w;
  *free_buf = free_a;
  return cur;
}

std::vector<ConvBn*> CudaEmbeddingModel::Impl::Layers(
    std::vector<std::string>* names) {
  std::vector<ConvBn*> out = {&stem};
  if (names) names->push_back("stem");
  // layerL.i as pyannote names them: a block's layer from its width.
  int layer = 0, index = 0, width = 0;
  for (Block& b : blocks) {
    const int c = b.conv1.conv->shape().out_channels;
    if (c != width) {
      ++layer;
      index = 0;
      width = c;
    }
    const std::string p = absl::StrCat("layer", layer, ".", index++);
    out.push_back(&b.conv1);
    out.push_back(&b.conv2);
    if (names) {
      names->push_back(p + ".conv1");
      names->push_back(p + ".conv2");
    }
    if (b.shortcut) {
      out.push_back(&*b.shortcut);
      if (names) names->push_back(p + ".shortcut");
    }
  }
  return out;
}

void CudaEmbeddingModel::Impl::OpenEngineCache() {
  const std::string source =
      absl::StrCat("cuda:", arena->device(), " embedding");
  absl::StatusOr<std::shared_ptr<ConvEngineCache>> cache =
      ConvEngineCache::Shared(options.conv_engine_cache);
  if (!cache.ok()) {
    ReportDiagnostic(source, absl::StrCat(cache.status().message(),
                                          "; choosing every engine anew"));
    return;
  }
  absl::StatusOr<ConvEngineEnvironment> env =
      cuda::GraphConv2d::Environment(arena->device());
  if (!env.ok()) {
    ReportDiagnostic(source, absl::StrCat("conv engine cache not used: ",
                                          env.status().message()));
    return;
  }
  engine_cache = *cache;
  const ConvEngineCache::LoadReport r = engine_cache->load_report();
  const ConvEngineCache::Census c = engine_cache->Count(*env);
  std::string what;
  if (r.missing) {
    what = "no file yet; it is written once the engines are chosen";
  } else if (r.foreign_format) {
    what =
        "not an engine cache file (wrong header): ignored, and replaced "
        "once the engines are chosen";
  } else {
    what = absl::StrCat(c.usable, " entries for this GPU and these versions, ",
                        c.other_gpu, " of other GPUs, ", c.other_versions,
                        " of other cuDNN/frontend versions (not used)");
    if (r.corrupt > 0) {
      absl::StrAppend(&what, ", ", r.corrupt,
                      " corrupt lines ignored (dropped at the next write)");
    }
  }
  ReportDiagnostic(
      source,
      absl::StrCat("conv engine cache ", engine_cache->path(), " (", env->gpu,
                   ", sm ", env->sm, ", cuDNN ", env->cudnn_version,
                   ", frontend ", env->frontend_version, "): ", what));
}

void CudaEmbeddingModel::Impl::SaveEngineCache() {
  if (engine_cache == nullptr) return;
  const std::string source =
      absl::StrCat("cuda:", arena->device(), " embedding");
  if (engine_cache->dirty()) {
    const absl::Status st = engine_cache->Save();
    if (!st.ok()) ReportDiagnostic(source, std::string(st.message()));
  }
}

absl::Status CudaEmbeddingModel::Impl::AttachGraphConvs() {
  std::vector<std::string> names;
  const std::vector<ConvBn*> layers = Layers(&names);
  if (!options.conv_engine_cache.empty()) OpenEngineCache();
  cuda::GraphConv2d::Options o;
  o.runtime_compilation = harness.conv_graph_runtime_compilation;
  o.max_candidates = harness.conv_graph_max_candidates;
  o.build_budget_ms = ConvGraphBuildBudgetMs(options);
  o.workspace_cap_bytes =
      static_cast<int64_t>(harness.conv_graph_workspace_cap_bytes);
  o.engine_cache = engine_cache;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->c32_weights.data() != nullptr) continue;  // own kernel
    cuda::GraphConv2d::Options layer = o;
    const Conv2d::Shape& shape = layers[i]->conv->shape();
    if (shape.kernel_h == 1 && shape.kernel_w == 1 &&
        harness.conv_graph_pointwise_candidates > 0) {
      layer.max_candidates = harness.conv_graph_pointwise_candidates;
    }
    ASSIGN_OR_RETURN(layers[i]->graph,
                     cuda::GraphConv2d::Create(ctx.get(), layers[i]->conv.get(),
                                               names[i], layer));
  }
  return absl::OkStatus();
}

absl::Status CudaEmbeddingModel::Impl::ChooseGraphEnginesAtLoad() {
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(arena->device()), "cudaSetDevice"));
  cudaStream_t stream = ctx->stream();
  // On the activations as Create zeroed them: timings do not depend on the
  // values, and zeros keep the pass finite.
  int h = 0, w = 0;
  void* free_buf = nullptr;
  ASSIGN_OR_RETURN(
      void* out,
      EnqueueTrunkFused(options.max_batch, act[0].data(), act[1].data(),
                        act[0].data(), act[2].data(), &h, &w, &free_buf));
  (void)out;
  RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream),
                             "choosing the graph engines at load"));
  LogGraphConvs();
  return absl::OkStatus();
}

void CudaEmbeddingModel::Impl::LogGraphConvs() {
  int on_graph = 0, on_legacy = 0, cached = 0, on_kernel = 0;
  std::string legacy_names;
  std::vector<std::string> names;
  const std::vector<ConvBn*> layers = Layers(&names);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->graph == nullptr) {
      ++on_kernel;
      continue;
    }
    on_graph += layers[i]->graph->graph_shapes();
    cached += layers[i]->graph->cached_shapes();
    const int l = layers[i]->graph->legacy_shapes();
    on_legacy += l;
    if (l > 0) absl::StrAppend(&legacy_names, " ", names[i]);
  }
  ReportDiagnostic(
      absl::StrCat("cuda:", arena->device(), " embedding"),
      absl::StrCat(
          "conv_api ", options.conv_api, " (", options.precision, "), batch ",
          options.max_batch, ": ", on_graph,
          " layer shapes on cuDNN graph engines, ", on_legacy,
          " on the legacy call", on_legacy > 0 ? ":" : "", legacy_names,
          on_kernel > 0
              ? absl::StrCat(", ", on_kernel,
                             " on the layer1 kernel (conv3x3_c32, ",
                             kernels::Conv3x3C32TileName(layer1_tile), ")")
              : "",
          engine_cache != nullptr
              ? absl::StrCat("; ", cached, " choices from the engine cache")
              : "",
          "; smaller calls run padded to ", options.max_batch, " windows"));
  // Each layer's engine and its timing at load, one event: the engines are
  // timed at every start without a cache, and a start that picked a slower
  // one is otherwise invisible from outside (the server's aggregate RTFx
  // differed by 10 % between two machine starts on 2026-12-04, and its log
  // could not say whether the engines did).
  ReportDiagnostic(absl::StrCat("cuda:", arena->device(), " embedding engines"),
                   absl::StrJoin(ConvEngines(), "; "));
  // The choices go to the cache file now, so a restart finds them.
  SaveEngineCache();
}

absl::Status CudaEmbeddingModel::Impl::Enqueue(int n, int s) {
  cudaStream_t stream = ctx->stream();
  RETURN_IF_ERROR(EnqueueFbank(n));
  // Graph API: the trunk runs at max_batch on the graph engines (rows n..
  // zeroed, their outputs never read: convolution, bias and ReLU act per
  // window, and the pooling reads n rows).
  const int tn = graph_api ? options.max_batch : n;
  if (tn > n) {
    const size_t per = size_t{kMel} * kFrames;
    RETURN_IF_ERROR(CudaStatus(
        cudaMemsetAsync(act[0].f32() + size_t(n) * per, 0,
                        sizeof(float) * size_t(tn - n) * per, stream),
        "zeroing the padding windows' features"));
  }
  int h = 0, w = 0;
  float* cur = nullptr;
  {
    void* free_buf = nullptr;
    ASSIGN_OR_RETURN(
        void* out,
        EnqueueTrunkFused(tn, act[0].data(), act[1].data(), act[0].data(),
                          act[2].data(), &h, &w, &free_buf));
    cur = static_cast<float*>(out);
  }
  const bool cl = channels_last;
  // cur: (n, 256, 10, 125) = (n, 2560, 125), or NHWC (n, 10, 125, 256).
  if (int64_t{h} * 256 != kFeat) {
    return absl::InternalError(
        absl::StrCat("ResNet output has ", h, " rows, expected 10"));
  }
  RETURN_IF_ERROR(kernels::LaunchStatsPool({.features = cur,
                                            .masks = masks.f32(),
                                            .stats = stats.f32(),
                                            .batch = n,
                                            .masks_per_item = s,
                                            .feat = kFeat,
                                            .time = w,
                                            .mask_frames = kFramesPerWindow,
                                            .channels_last_rows = cl ? h : 0},
                                           stream));
  return seg1->Forward(stats.f32(), int64_t{n} * s, emb.f32());
}

CudaEmbeddingModel::CudaEmbeddingModel(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
CudaEmbeddingModel::~CudaEmbeddingModel() = default;

std::string CudaEmbeddingModel::precision() const {
  return impl_->options.precision;
}
bool CudaEmbeddingModel::layer1_kernel() const { return impl_->layer1_kernel; }
double CudaEmbeddingModel::device_seconds() const {
  return impl_->busy[0].seconds() + impl_->busy[1].seconds();
}
int CudaEmbeddingModel::graphs() const { return impl_->graphs->size(); }

std::vector<std::string> CudaEmbeddingModel::conv_engines() const {
  return impl_->ConvEngines();
}

std::vector<std::string> CudaEmbeddingModel::Impl::ConvEngines() {
  std::vector<std::string> out;
  if (!graph_api) return out;
  std::vector<std::string> names;
  const std::vector<ConvBn*> layers = Layers(&names);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->graph == nullptr) {
      out.push_back(absl::StrCat(names[i], ": layer1 kernel conv3x3_c32 (",
                                 kernels::Conv3x3C32TileName(layer1_tile),
                                 ")"));
      continue;
    }
    for (std::string& line : layers[i]->graph->Describe())
      out.push_back(std::move(line));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<CudaEmbeddingModel>> CudaEmbeddingModel::Create(
    const SafetensorsFile& w, std::shared_ptr<DeviceArena> arena_owner,
    const CudaModelOptions& options, const CudaHarnessOptions& harness) {
  DeviceArena* arena = arena_owner.get();
  if (arena == nullptr)
    return absl::InvalidArgumentError("CudaEmbeddingModel: no arena");
  if (options.max_batch < 1 || options.max_masks_per_window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel: max_batch (", options.max_batch,
                     ") and max_masks_per_window (",
                     options.max_masks_per_window, ") must be >= 1"));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ASSIGN_OR_RETURN(impl->precision, cuda::ParsePrecision(options.precision));
  const bool tf32 = impl->precision == cuda::Precision::kTf32;
  impl->channels_last = tf32;
  const bool channels_last = impl->channels_last;
  impl->harness = harness;
  if (options.conv_api != "auto" && options.conv_api != "legacy" &&
      options.conv_api != "graph") {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel: conv_api '", options.conv_api,
                     "' is not supported; use auto, legacy or graph"));
  }
  if (options.conv_api == "auto") {
    // The graph path for TF32 when the binary has the frontend (ADR 0079:
    // its gates passed repeatedly once every graph convolution runs behind
    // the layer fence, ADR 0078); everything else keeps the legacy call.
    const bool graph = tf32 && cuda::GraphConv2d::Built();
    impl->options.conv_api = graph ? "graph" : "legacy";
  }
  impl->graph_api = impl->options.conv_api != "legacy";
  if (impl->graph_api && !tf32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaEmbeddingModel: conv_api '", impl->options.conv_api,
        "' needs precision tf32 (precision is ", options.precision, ")"));
  }
  impl->layer1_kernel = options.layer1_conv_kernel && tf32;
  if (impl->layer1_kernel && !harness.layer1_conv_tile.empty()) {
    ASSIGN_OR_RETURN(impl->layer1_tile,
                     kernels::Conv3x3C32TileFromName(harness.layer1_conv_tile));
  }
  if (impl->layer1_kernel) {
    // Built for sm_90a only: other GPUs keep cuDNN for layer1, and say so.
    const absl::Status supported =
        kernels::Conv3x3C32Supported(arena->device());
    if (!supported.ok()) {
      ReportDiagnostic(absl::StrCat("cuda:", arena->device(), " embedding"),
                       absl::StrCat("layer1 on cuDNN: ", supported.message()));
      impl->layer1_kernel = false;
    }
  }
  if (impl->layer1_kernel && harness.layer1_conv_kernel_needs_record) {
    // Production runs the kernel only where the committed record qualified
    // it for this device and batch (both layer forms, the sources as
    // compiled here): bench/qualify, kernels/qualification.h.
    cudaDeviceProp prop{};
    RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, arena->device()),
                               "cudaGetDeviceProperties"));
    const kernels::KernelSelection s = kernels::SelectEmbeddedQualified(
        "conv3x3_c32", options.max_batch, "tf32", prop.name,
        absl::StrCat(prop.major, ".", prop.minor));
    if (!s.use_custom) {
      ReportDiagnostic(absl::StrCat("cuda:", arena->device(), " embedding"),
                       absl::StrCat("layer1 on cuDNN: ", s.reason));
      impl->layer1_kernel = false;
    }
  }
  impl->arena_owner = std::move(arena_owner);
  impl->arena = arena;
  ASSIGN_OR_RETURN(impl->ctx,
                   CudaContext::Create(arena, "embedding", impl->precision,
                                       options.workspace_bytes,
                                       options.timed_conv_algorithms));
  CudaContext* ctx = impl->ctx.get();
  impl->graphs =
      std::make_unique<cuda::GraphCache>(ctx->stream(), arena, "embedding");
  const std::string wowner = "embedding/weights";

  // Fbank constants, from the CPU fbank so both backends use the same floats.
  ASSIGN_OR_RETURN(std::unique_ptr<Fbank> fbank, Fbank::Create());
  ASSIGN_OR_RETURN(impl->window,
                   DeviceBuffer::FromHost(arena, fbank->window(), wowner));
  ASSIGN_OR_RETURN(impl->mel_banks,
                   DeviceBuffer::FromHost(arena, fbank->mel_banks(), wowner));
  ASSIGN_OR_RETURN(impl->fft, cuda::RealFftPlans::Create(
                                  ctx, kernels::kFbankFftLength, kFrames,
                                  options.max_batch, "embedding/fft"));

  // ResNet34 trunk.
  ASSIGN_OR_RETURN(impl->stem, LoadConvBn(ctx, w, "resnet.conv1", "resnet.bn1",
                                          {.out_channels = kStem,
                                           .in_channels = 1,
                                           .kernel_h = 3,
                                           .kernel_w = 3,
                                           .pad_h = 1,
                                           .pad_w = 1},
                                          channels_last));
  const std::array<int, 4> kBlocks = HP::kBlocks;
  const std::array<int, 4> kPlanes = HP::kChannels;
  int in_planes = kStem;
  for (int layer = 0; layer < 4; ++layer) {
    for (int b = 0; b < kBlocks[layer]; ++b) {
      const int planes = kPlanes[layer];
      const int stride = (layer > 0 && b == 0) ? 2 : 1;
      const std::string p = absl::StrCat("resnet.layer", layer + 1, ".", b);
      // Both convolutions of a 32-channel stride-1 block (layer1) fit the
      // kernel's one shape.
      const bool c32 = impl->layer1_kernel && stride == 1 &&
                       in_planes == kernels::kConv3x3C32Channels &&
                       planes == kernels::kConv3x3C32Channels;
      Block block;
      ASSIGN_OR_RETURN(block.conv1,
                       LoadConvBn(ctx, w, p + ".conv1", p + ".bn1",
                                  {.out_channels = planes,
                                   .in_channels = in_planes,
                                   .kernel_h = 3,
                                   .kernel_w = 3,
                                   .stride_h = stride,
                                   .stride_w = stride,
                                   .pad_h = 1,
                                   .pad_w = 1},
                                  channels_last, c32, impl->layer1_tile));
      ASSIGN_OR_RETURN(block.conv2,
                       LoadConvBn(ctx, w, p + ".conv2", p + ".bn2",
                                  {.out_channels = planes,
                                   .in_channels = planes,
                                   .kernel_h = 3,
                                   .kernel_w = 3,
                                   .pad_h = 1,
                                   .pad_w = 1},
                                  channels_last, c32, impl->layer1_tile));
      if (stride != 1 || in_planes != planes) {
        ASSIGN_OR_RETURN(
            ConvBn sc, LoadConvBn(ctx, w, p + ".shortcut.0", p + ".shortcut.1",
                                  {.out_channels = planes,
                                   .in_channels = in_planes,
                                   .kernel_h = 1,
                                   .kernel_w = 1,
                                   .stride_h = stride,
                                   .stride_w = stride},
                                  channels_last));
        std::vector<float> bias = block.conv2.host_shift;
        for (size_t i = 0; i < bias.size(); ++i) bias[i] += sc.host_shift[i];
        ASSIGN_OR_RETURN(block.conv2_bias_with_shortcut,
                         DeviceBuffer::FromHost(arena, bias, wowner));
        block.shortcut = std::move(sc);
      }
      impl->blocks.push_back(std::move(block));
      in_planes = planes;
    }
  }
  if (impl->graph_api) RETURN_IF_ERROR(impl->AttachGraphConvs());
  ASSIGN_OR_RETURN(std::vector<float> seg_w,
                   ReadF32(w, "resnet.seg_1.weight", {kEmbeddingDim, kStats}));
  ASSIGN_OR_RETURN(std::vector<float> seg_b,
                   ReadF32(w, "resnet.seg_1.bias", {kEmbeddingDim}));
  ASSIGN_OR_RETURN(impl->seg1, cuda::Linear::Create(ctx, kStats, kEmbeddingDim,
                                                    seg_w, seg_b, wowner));

  // Activations, sized for max_batch windows.
  const int64_t bm = options.max_batch;
  impl->max_pairs = options.max_batch * options.max_masks_per_window;
  const std::string aowner = "embedding/activations";
  const size_t act_bytes =
      std::max<size_t>({sizeof(float) * kStem * kMel * kFrames,
                        sizeof(double) * 2 * kFrames * kernels::kFbankBins,
                        sizeof(double) * kFrames * kernels::kFbankFftLength});
  ASSIGN_OR_RETURN(impl->audio,
                   DeviceBuffer::Allocate(
                       arena, sizeof(float) * bm * kWindowSamples, aowner));
  ASSIGN_OR_RETURN(
      impl->masks,
      DeviceBuffer::Allocate(
          arena, sizeof(float) * impl->max_pairs * kFramesPerWindow, aowner));
  for (DeviceBuffer& a : impl->act) {  // act_bytes: the stem's output
    ASSIGN_OR_RETURN(a, DeviceBuffer::Allocate(arena, act_bytes * bm, aowner));
    // Zeroed once, on the model's stream (so ordered before all its work):
    // the fbank's FFT reads whole plans' worth of frames (cuda_fft.h), past
    // a call's windows too, and the graph engines are timed on them.
    RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(a.data(), 0, a.bytes(), ctx->stream()),
                   "zeroing the embedding activations"));
  }
  ASSIGN_OR_RETURN(
      impl->stats,
      DeviceBuffer::Allocate(arena, sizeof(float) * impl->max_pairs * kStats,
                             aowner));
  ASSIGN_OR_RETURN(
      impl->emb,
      DeviceBuffer::Allocate(
          arena, sizeof(float) * impl->max_pairs * kEmbeddingDim, aowner));
  for (int slot = 0; slot < Impl::kSlots; ++slot) {
    ASSIGN_OR_RETURN(impl->uploader[slot],
                     cuda::WindowUploader::Create(arena, options.max_batch,
                                                  "embedding/windows"));
    // The next batch's audio crosses while the current one computes
    // (cuda_window_upload.h, Ordering): an embedding batch of 32 windows of
    // 32 different streams is ~20 MB.
    RETURN_IF_ERROR(impl->uploader[slot].UseCopyStream());
    ASSIGN_OR_RETURN(
        impl->host_masks[slot],
        cuda::PinnedBuffer::Allocate(
            size_t{static_cast<size_t>(impl->max_pairs)} * kFramesPerWindow,
            "masks"));
    ASSIGN_OR_RETURN(
        impl->host_emb[slot],
        cuda::PinnedBuffer::Allocate(
            size_t{static_cast<size_t>(impl->max_pairs)} * kEmbeddingDim,
            "embeddings"));
  }
  if (impl->graph_api) RETURN_IF_ERROR(impl->ChooseGraphEnginesAtLoad());
  return std::unique_ptr<CudaEmbeddingModel>(
      new CudaEmbeddingModel(std::move(impl)));
}

absl::Status CudaEmbeddingModel::Run(std::span<const float> windows, int batch,
                                     std::span<const float> masks,
                                     int masks_per_window,
                                     std::span<float> embeddings) {
  if (batch < 0 ||
      windows.size() != static_cast<size_t>(batch) * kWindowSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaEmbeddingModel::Run: batch ", batch, " with ", windows.size(),
        " samples; expected batch × ", kWindowSamples));
  }
  // Contiguous windows are spans that touch end to end.
  std::vector<int64_t> starts(batch), ends(batch);
  for (int i = 0; i < batch; ++i) {
    starts[i] = int64_t{i} * kWindowSamples;
    ends[i] = starts[i] + kWindowSamples;
  }
  return RunSpans({.audio = windows, .starts = starts, .ends = ends}, masks,
                  masks_per_window, embeddings);
}

namespace {

// RunSpans' and StartSpans' checks of one call's arguments.
absl::Status CheckBatch(const WindowSpans& spans, std::span<const float> masks,
                        int masks_per_window, std::span<float> embeddings,
                        int max_pairs) {
  if (masks_per_window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: masks_per_window ",
                     masks_per_window, " < 1"));
  }
  RETURN_IF_ERROR(ValidateWindowSpans(spans));
  const size_t b = static_cast<size_t>(spans.batch()),
               s = static_cast<size_t>(masks_per_window);
  if (masks.size() != b * s * kFramesPerWindow ||
      embeddings.size() != b * s * kEmbeddingDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: sizes masks ", masks.size(),
                     ", embeddings ", embeddings.size(), " do not match batch ",
                     spans.batch(), " × ", masks_per_window, " masks"));
  }
  if (masks_per_window > max_pairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: ", masks_per_window,
                     " masks per window exceed the ", max_pairs,
                     " pairs the buffers hold; raise max_masks_per_window"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaEmbeddingModel::Impl::EnqueueChunk(
    int slot, const WindowSpans& spans, int first, int n,
    std::span<const float> masks_in, int masks_per_window) {
  const size_t s = static_cast<size_t>(masks_per_window);
  const size_t mask_count = static_cast<size_t>(n) * s * kFramesPerWindow;
  const size_t emb_count = static_cast<size_t>(n) * s * kEmbeddingDim;
  cudaStream_t stream = ctx->stream();
  RETURN_IF_ERROR(busy[slot].Begin(stream));
  RETURN_IF_ERROR(uploader[slot].Upload(spans, first, n, audio, stream));
  RETURN_IF_ERROR(cuda::UploadStaged(
      masks_in.data() + static_cast<size_t>(first) * s * kFramesPerWindow,
      mask_count, host_masks[slot], masks, stream, "masks"));
  RETURN_IF_ERROR(graphs->Run({n, masks_per_window}, options.use_cuda_graphs,
                              [&] { return Enqueue(n, masks_per_window); }));
  RETURN_IF_ERROR(cuda::DownloadAsync(emb, emb_count, host_emb[slot], stream,
                                      "embeddings"));
  return busy[slot].End(stream);
}

absl::Status CudaEmbeddingModel::RunSpans(const WindowSpans& spans,
                                          std::span<const float> masks,
                                          int masks_per_window,
                                          std::span<float> embeddings) {
  Impl& m = *impl_;
  if (!m.started.empty()) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::RunSpans while a started batch is not finished");
  }
  RETURN_IF_ERROR(
      CheckBatch(spans, masks, masks_per_window, embeddings, m.max_pairs));
  const int batch = spans.batch();
  if (batch == 0) return absl::OkStatus();
  RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice"));
  const size_t s = static_cast<size_t>(masks_per_window);
  const int chunk =
      std::min(m.options.max_batch, m.max_pairs / masks_per_window);
  for (int first = 0; first < batch; first += chunk) {
    const int n = std::min(chunk, batch - first);
    RETURN_IF_ERROR(
        m.EnqueueChunk(0, spans, first, n, masks, masks_per_window));
    RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(m.ctx->stream()),
                               "embedding forward"));
    RETURN_IF_ERROR(m.busy[0].Accumulate());
    std::memcpy(
        embeddings.data() + static_cast<size_t>(first) * s * kEmbeddingDim,
        m.host_emb[0].data(),
        static_cast<size_t>(n) * s * kEmbeddingDim * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status CudaEmbeddingModel::StartSpans(const WindowSpans& spans,
                                            std::span<const float> masks,
                                            int masks_per_window,
                                            std::span<float> embeddings) {
  Impl& m = *impl_;
  if (m.started.size() >= Impl::kSlots) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::StartSpans: two batches are started and not "
        "finished; finish one first");
  }
  Impl::Started started{.slot = m.next_slot, .embeddings = embeddings};
  started.status =
      CheckBatch(spans, masks, masks_per_window, embeddings, m.max_pairs);
  const int batch = spans.batch();
  const int chunk =
      masks_per_window >= 1
          ? std::min(m.options.max_batch, m.max_pairs / masks_per_window)
          : 0;
  if (started.status.ok() && batch > chunk) {
    // More than one launch: run it now (slot 0's staging, so only when
    // nothing else is in flight), as RunSpans would.
    started.status = m.started.empty()
                         ? RunSpans(spans, masks, masks_per_window, embeddings)
                         : absl::FailedPreconditionError(absl::StrCat(
                               "CudaEmbeddingModel::StartSpans: a batch of ",
                               batch, " windows (more than one launch of ",
                               chunk, ") while another is started"));
    started.embeddings = {};  // already written
  } else if (started.status.ok() && batch > 0) {
    started.status =
        CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice");
    if (started.status.ok()) {
      started.status = m.EnqueueChunk(started.slot, spans, 0, batch, masks,
                                      masks_per_window);
    }
    if (started.status.ok()) m.next_slot = (m.next_slot + 1) % Impl::kSlots;
  } else {
    started.embeddings = {};  // nothing to write
  }
  m.started.push_back(std::move(started));
  return absl::OkStatus();
}

absl::Status CudaEmbeddingModel::FinishSpans() {
  Impl& m = *impl_;
  if (m.started.empty()) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::FinishSpans: no batch is started");
  }
  Impl::Started started = std::move(m.started.front());
  m.started.pop_front();
  RETURN_IF_ERROR(started.status);
  if (started.embeddings.empty()) return absl::OkStatus();
  // Only this batch: the next one may be running behind it.
  RETURN_IF_ERROR(m.busy[started.slot].Wait());
  RETURN_IF_ERROR(m.busy[started.slot].Accumulate());
  std::memcpy(started.embeddings.data(), m.host_emb[started.slot].data(),
              started.embeddings.size() * sizeof(float));
  return absl::OkStatus();
}

bool CudaEmbeddingModel::pipelined() const { return true; }

absl::Status CudaEmbeddingModel::ComputeFbank(std::span<const float> windows,
                                              int batch,
                                              std::span<float> fbank) {
  Impl& m = *impl_;
  const size_t per = size_t{kFrames} * kMel;
  if (batch < 0 ||
      windows.size() != static_cast<size_t>(batch) * kWindowSamples ||
      fbank.size() != static_cast<size_t>(batch) * per) {
    return absl::InvalidArgumentError(
        "CudaEmbeddingModel::ComputeFbank: size mismatch");
  }
  RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice"));
  cudaStream_t stream = m.ctx->stream();
  std::vector<float> host(per * m.options.max_batch);
  for (int first = 0; first < batch; first += m.options.max_batch) {
    const int n = std::min(m.options.max_batch, batch - first);
    std::vector<int64_t> starts(n), ends(n);
    for (int i = 0; i < n; ++i) {
      starts[i] = int64_t{first + i} * kWindowSamples;
      ends[i] = starts[i] + kWindowSamples;
    }
    RETURN_IF_ERROR(
        m.uploader[0].Upload({.audio = windows, .starts = starts, .ends = ends},
                             0, n, m.audio, stream));
    RETURN_IF_ERROR(m.EnqueueFbank(n));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(host.data(), m.act[0].data(), sizeof(float) * n * per,
                        cudaMemcpyDeviceToHost, stream),
        "copying fbank from the device"));
    RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "fbank"));
    // Device layout (item, mel, frame) -> (item, frame, mel).
    for (int b = 0; b < n; ++b)
      for (int mel = 0; mel < kMel; ++mel)
        for (int f = 0; f < kFrames; ++f)
          fbank[(size_t{static_cast<size_t>(first + b)} * kFrames + f) * kMel +
                mel] =
              host[(size_t{static_cast<size_t>(b)} * kMel + mel) * kFrames + f];
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
