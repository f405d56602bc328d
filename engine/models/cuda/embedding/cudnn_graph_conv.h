// One ResNet trunk convolution through cuDNN's graph API (the header-only
// cuDNN frontend, //third_party/cudnn_frontend; ADR 0072). Each call is one
// operation graph on NHWC float32 tensors with TF32 tensor-core math
// (precision "tf32") and FP32 accumulation:
//   ForwardBiasRelu: y = ReLU(conv(x, w) + bias [+ z])
//   Forward:         y = conv(x, w)
// so cuDNN may pick a fused engine that the legacy
// cudnnConvolutionBiasActivationForward does not reach.
//
// Engine choice, eagerly on first use (never during CUDA graph capture;
// cuda_graph_cache.h runs each shape eagerly first). For a new (epilogue,
// height, width): the heuristics' candidates (modes A and B, then the
// fallback list) that are deterministic, fit the context's workspace and
// neither down-convert the float inputs nor reduce in less than FP32 are
// built, at most `max_candidates` of them, each timed on the device with
// the call's own tensors (it writes y; the call then overwrites it), and
// the fastest is kept. Each batch size is a shape of its own (the embedding
// model runs every layer at its largest batch only, ADR 0077).
// With an engine cache (conv_engine_cache.h) a shape whose choice is
// recorded for this GPU, these library versions and this policy builds that
// one engine (and times it once, for Describe) instead of the candidates; an
// entry that no longer builds or runs is forgotten with a diagnostic and the
// candidates are timed as without a cache. Every choice is recorded; the
// owner saves the cache.
// A shape no graph engine supports runs on the legacy Conv2d, which also
// owns the weights (its NHWC filter). Describe() says which
// engine each shape got and why (the embedding model logs a summary per
// batch size and rtfx_main prints every line).
//
// Every plan whose workspace is at most 1 MiB runs on a workspace of its
// own, zeroed at the choice, and a 4-byte memset on the stream precedes each
// graph convolution (the layer fence), so none of its kernels starts before
// every earlier kernel on the stream has finished. Without the fence some
// calls of some loads gave wrong embeddings on an H200 (ADR 0078: 10 of 24
// loads); with it every call was right. The likeliest reading: a Hopper
// engine launched as a programmatic dependent launch reads a tensor (the
// residual, written two kernels back) before its writer has finished. Both
// were switches until ADR 0092 made them fixed behaviour.
//
// Errors: absl::Status; cudnn_frontend's exceptions never leave this file.
// A failing execution after the choice is an Internal error, not a silent
// fallback.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_GRAPH_CONV_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_GRAPH_CONV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_context.h"
#include "engine/models/cuda/embedding/conv_engine_cache.h"
#include "engine/models/cuda/embedding/cuda_conv2d.h"

namespace diarization::models::cuda {

class GraphConv2d {
 public:
  struct Options {
    // Built and timed plans per shape (building one can take ~0.1-1 s when
    // cuDNN compiles a fused kernel at run time).
    int max_candidates = 8;
    // Host time per shape after which no further candidate is built (once
    // one is).
    double build_budget_ms = 1000;
    // Consider engines cuDNN compiles at run time (NVRTC; up to a second
    // each to build) alongside the precompiled ones (the configuration
    // measured in docs/benchmarks.md, 14:31). Off: they are tried only where
    // no precompiled engine builds, which keeps the first use of a shape
    // short.
    bool runtime_compilation = true;
    // Timed runs per candidate after one warm-up run; the minimum counts.
    int timing_runs = 3;
    // Candidates needing more workspace than this are not considered
    // (0: the context's whole workspace).
    int64_t workspace_cap_bytes = 0;
    // Choices made before (null: none kept). Shared by every layer and
    // pipeline that uses the same file.
    std::shared_ptr<ConvEngineCache> engine_cache;
  };

  // `legacy` must be a channels-last layer in a TF32 context; it must
  // outlive this object. `name`
  // labels the log lines.
  static absl::StatusOr<std::unique_ptr<GraphConv2d>> Create(
      CudaContext* ctx, Conv2d* legacy, std::string name,
      const Options& options);
  ~GraphConv2d();
  GraphConv2d(const GraphConv2d&) = delete;
  GraphConv2d& operator=(const GraphConv2d&) = delete;

  // Same contracts as Conv2d's (cuda_conv2d.h): x, y, z on the device, NHWC
  // float; bias (out_channels) float; z null or shaped like y and not
  // aliasing it; enqueued on the context's stream.
  absl::Status Forward(const void* x, int n, int h, int w, void* y);
  absl::Status ForwardBiasRelu(const void* x, int n, int h, int w,
                               const void* bias, const void* z, void* y);

  // One line per shape seen so far: "name n×c×h×w epilogue: graph <engine>
  // (t ms, ws B)" or "...: legacy (<why>)".
  std::vector<std::string> Describe() const;
  // Shapes that run on a graph engine / on the legacy call; shapes whose
  // choice came from the engine cache.
  int graph_shapes() const;
  int legacy_shapes() const;
  int cached_shapes() const;

  // What a choice depends on besides the layer, for the cache's keys: the
  // GPU of `device` and the cuDNN and frontend versions. Fails without the
  // frontend headers or the device.
  static absl::StatusOr<ConvEngineEnvironment> Environment(int device);
  // Whether this binary was built with the cuDNN frontend headers (without
  // them Create fails with FailedPrecondition).
  static bool Built();

  const Conv2d::Shape& shape() const { return legacy_->shape(); }
  int OutH(int h) const { return legacy_->OutH(h); }
  int OutW(int w) const { return legacy_->OutW(w); }

 private:
  struct Plan;
  enum class Epilogue { kNone, kBiasRelu, kBiasAddRelu };
  GraphConv2d() = default;
  absl::StatusOr<Plan*> PlanFor(Epilogue e, const void* x, int n, int h, int w,
                                const void* bias, const void* z, void* y);
  ConvLayerKey LayerKey(Epilogue e, int n, int h, int w) const;
  int64_t WorkspaceLimit() const;
  // Builds and times the cached `choice` into *plan; an error says why it
  // cannot be used (the caller forgets it and times the candidates).
  absl::Status PlanFromCache(const ConvEngineChoice& choice, Plan* plan,
                             const void* x, const void* bias, const void* z,
                             void* y);
  std::string Line(const Plan& p) const;
  absl::Status RunLegacy(Epilogue e, const void* x, int n, int h, int w,
                         const void* bias, const void* z, void* y);

  CudaContext* ctx_ = nullptr;
  Conv2d* legacy_ = nullptr;
  std::string name_;
  Options options_;
  ConvEngineEnvironment environment_;
  struct Plans;
  std::unique_ptr<Plans> plans_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_GRAPH_CONV_H_
