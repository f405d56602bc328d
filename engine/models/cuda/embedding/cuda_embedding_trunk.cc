// CudaEmbeddingModel's ResNet trunk: the fused convolution pass, its cuDNN
// graph convolutions, the engines chosen at load and their engine cache
// (cuda_embedding_impl.h lists the files).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/embedding/cuda_embedding_impl.h"
#include "kernels/conv3x3_c32.h"

namespace diarization::models {
namespace {

using cuda::Conv2d;
using cuda::CudaStatus;
using cuda_embedding::Block;
using cuda_embedding::ConvBn;
using cuda_embedding::kFrames;
using cuda_embedding::kMel;

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

}  // namespace

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

}  // namespace diarization::models
