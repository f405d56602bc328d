#include "engine/models/cuda/embedding/cudnn_graph_conv.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_precision.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/embedding/cudnn_conv_operation_graph.h"

// The frontend's headers come from tools/third_party/get_cudnn_frontend.sh
// (scripts/test.sh and tools/device/pack.sh run it). A checkout built
// without them still builds: only conv_api "graph" then fails,
// at load, saying so (the #else branch at the end of this file).
#if __has_include(<cudnn_frontend.h>)
#include <cudnn_frontend.h>

namespace diarization::models::cuda {
namespace {

namespace fe = cudnn_frontend;

using conv_graph::FeMessage;
using conv_graph::kUidBias;
using conv_graph::kUidW;
using conv_graph::kUidX;
using conv_graph::kUidY;
using conv_graph::kUidZ;
using conv_graph::MakeGraph;

// Runs `f` once (warm-up), then `runs` times between CUDA events on
// `stream`; returns the fastest run in milliseconds. The stream must not be
// capturing. It first waits for the stream: a candidate runs without the
// layer fence (ADR 0078/0079), and must not overlap the previous layer's
// kernels, which may still read the buffer this layer writes.
absl::StatusOr<float> TimeOnStream(cudaStream_t stream, int runs,
                                   const std::function<absl::Status()>& f) {
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamSynchronize(stream), "graph conv before timing"));
  RETURN_IF_ERROR(f());
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamSynchronize(stream), "graph conv warm-up run"));
  cudaEvent_t start = nullptr, stop = nullptr;
  RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&start), "cudaEventCreate"));
  absl::Status st = CudaStatus(cudaEventCreate(&stop), "cudaEventCreate");
  float best = std::numeric_limits<float>::infinity();
  for (int r = 0; st.ok() && r < std::max(1, runs); ++r) {
    st = CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord");
    if (st.ok()) st = f();
    if (st.ok())
      st = CudaStatus(cudaEventRecord(stop, stream), "cudaEventRecord");
    if (st.ok())
      st = CudaStatus(cudaEventSynchronize(stop), "graph conv timed run");
    float ms = 0;
    if (st.ok())
      st = CudaStatus(cudaEventElapsedTime(&ms, start, stop),
                      "cudaEventElapsedTime");
    if (st.ok()) best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  RETURN_IF_ERROR(st);
  return best;
}

}  // namespace

// Largest workspace a plan gets for itself (GraphConv2d::Plan).
constexpr int64_t kPrivateWorkspaceMax = int64_t{1} << 20;

struct GraphConv2d::Plan {
  Epilogue epilogue = Epilogue::kNone;
  int n = 0, h = 0, w = 0;
  // Null: this shape runs on the legacy call.
  std::shared_ptr<fe::graph::Graph> graph;
  bool on_engine() const { return graph != nullptr; }
  int64_t plan_index = -1;
  int64_t workspace = 0;
  // The plan's own workspace when it needs at most kPrivateWorkspaceMax
  // bytes; empty: it runs on the context's
  // shared one.
  DeviceBuffer private_workspace;
  std::string engine;
  std::string why_legacy;
  float graph_ms = -1, legacy_ms = -1;
  int offered = 0, built = 0, timed = 0;
  // Of the built candidates, those cuDNN compiled at run time.
  int runtime_compiled = 0;
  // Host wall time of the choice (building and timing the candidates).
  double choose_ms = 0;
  // The choice came from the engine cache (a graph engine built and timed
  // alone, or the legacy call).
  bool from_cache = false;
  // Every candidate timed for this shape (for the per-layer evidence:
  // which engines were close, which needed how much workspace).
  struct Timed {
    std::string engine;
    float ms;
    int64_t workspace;
  };
  std::vector<Timed> timed_list;
  // Candidates that did not build (deselected by a note or the workspace,
  // or failed), and the first reasons.
  int not_built = 0;
  std::string not_built_reasons;
};

struct GraphConv2d::Plans {
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<Plan>> by_shape;
  // The layer fence: the bytes the memset before each execution writes.
  DeviceBuffer fence;
};

namespace {

const char* EpilogueName(int e) {
  switch (e) {
    case 0:
      return "conv";
    case 1:
      return "conv+bias+relu";
    default:
      return "conv+bias+add+relu";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphConv2d>> GraphConv2d::Create(
    CudaContext* ctx, Conv2d* legacy, std::string name,
    const Options& options) {
  if (ctx == nullptr || legacy == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("GraphConv2d ", name, ": no context or legacy layer"));
  }
  const Conv2d::Shape& s = legacy->shape();
  if (!s.channels_last) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphConv2d ", name,
        ": the graph path runs NHWC tensors only (the layer is NCHW); use "
        "conv_api \"legacy\" for this layout"));
  }
  if (ctx->precision() != Precision::kTf32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphConv2d ", name, ": precision ", PrecisionName(ctx->precision()),
        " is not covered by the graph path (tf32 only)"));
  }
  if (options.max_candidates < 1 || options.workspace_cap_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GraphConv2d ", name,
                     ": max_candidates must be >= 1 and workspace_cap_bytes "
                     ">= 0"));
  }
  std::unique_ptr<GraphConv2d> conv(new GraphConv2d());
  conv->ctx_ = ctx;
  conv->legacy_ = legacy;
  conv->name_ = std::move(name);
  conv->options_ = options;
  if (options.engine_cache != nullptr) {
    ASSIGN_OR_RETURN(conv->environment_, Environment(ctx->arena()->device()));
  }
  conv->plans_ = std::make_unique<Plans>();
  ASSIGN_OR_RETURN(conv->plans_->fence,
                   DeviceBuffer::Allocate(ctx->arena(), 256,
                                          ctx->owner() + "/graph_conv_fence"));
  return conv;
}

bool GraphConv2d::Built() { return true; }

absl::StatusOr<ConvEngineEnvironment> GraphConv2d::Environment(int device) {
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device),
                             "cudaGetDeviceProperties"));
  return ConvEngineEnvironment{
      .gpu = prop.name,
      .sm = prop.major * 10 + prop.minor,
      .cudnn_version = static_cast<int64_t>(cudnnGetVersion()),
      .frontend_version = CUDNN_FRONTEND_VERSION};
}

int64_t GraphConv2d::WorkspaceLimit() const {
  const int64_t all = static_cast<int64_t>(ctx_->workspace_bytes());
  return options_.workspace_cap_bytes > 0
             ? std::min(all, options_.workspace_cap_bytes)
             : all;
}

ConvLayerKey GraphConv2d::LayerKey(Epilogue e, int n, int h, int w) const {
  const Conv2d::Shape& s = legacy_->shape();
  return ConvLayerKey{.precision = "tf32",
                      .policy = absl::StrCat(
                          "graph", options_.runtime_compilation ? "+rtc" : "",
                          "+c", options_.max_candidates),
                      .epilogue = EpilogueName(static_cast<int>(e)),
                      .n = n,
                      .c = s.in_channels,
                      .h = h,
                      .w = w,
                      .k = s.out_channels,
                      .kernel_h = s.kernel_h,
                      .kernel_w = s.kernel_w,
                      .stride_h = s.stride_h,
                      .stride_w = s.stride_w,
                      .pad_h = s.pad_h,
                      .pad_w = s.pad_w,
                      .workspace_limit = WorkspaceLimit()};
}

GraphConv2d::~GraphConv2d() = default;

absl::Status GraphConv2d::RunLegacy(Epilogue e, const void* x, int n, int h,
                                    int w, const void* bias, const void* z,
                                    void* y) {
  if (e == Epilogue::kNone) return legacy_->Forward(x, n, h, w, y);
  return legacy_->ForwardBiasRelu(x, n, h, w, bias, z, y);
}

namespace {

// The variant pack of one call: the uids of the graph's tensors to their
// device pointers.
std::unordered_map<int64_t, void*> VariantPack(int epilogue, const void* x,
                                               const void* weights,
                                               const void* bias, const void* z,
                                               void* y) {
  std::unordered_map<int64_t, void*> pack = {
      {kUidX, const_cast<void*>(x)},
      {kUidW, const_cast<void*>(weights)},
      {kUidY, y}};
  if (epilogue != 0) pack[kUidBias] = const_cast<void*>(bias);
  if (epilogue == 2) pack[kUidZ] = const_cast<void*>(z);
  return pack;
}

absl::Status ExecutePlan(fe::graph::Graph& g, cudnnHandle_t handle,
                         std::unordered_map<int64_t, void*>& pack,
                         void* workspace, int64_t index) {
  try {
    fe::error_t xe = g.execute_plan_at_index(handle, pack, workspace, index);
    if (xe.is_bad()) return absl::InternalError(FeMessage(xe));
  } catch (const std::exception& ex) {
    return absl::InternalError(ex.what());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GraphConv2d::PlanFromCache(const ConvEngineChoice& choice,
                                        Plan* plan, const void* x,
                                        const void* bias, const void* z,
                                        void* y) {
  const int e = static_cast<int>(plan->epilogue);
  if (choice.engine == "legacy") {
    plan->why_legacy = "the engine cache's choice";
    plan->from_cache = true;
    return absl::OkStatus();
  }
  int64_t engine_id = -1;
  std::map<int, int64_t> knob_choices;
  if (!ParseCudnnEngineTag(choice.engine, &engine_id, &knob_choices)) {
    return absl::InvalidArgumentError("not a cuDNN frontend engine name");
  }
  // The recorded engine is built from the heuristics' own configuration of
  // it for this graph, not from its index and knobs through
  // Graph::create_execution_plan: loads that built it that way differed by
  // 0.17-0.42 relative on the H200 (17:27 round; cause not isolated), while
  // this path had passed every gate. The heuristics query costs
  // milliseconds; the timing of up to 8 candidates is what the cache saves.
  const Conv2d::Shape& s = legacy_->shape();
  ASSIGN_OR_RETURN(std::shared_ptr<fe::graph::Graph> g,
                   MakeGraph(ctx_->cudnn(), s, e, plan->n, plan->h, plan->w,
                             OutH(plan->h), OutW(plan->w), WorkspaceLimit()));
  int64_t index = -1, ws = 0;
  std::string built_name;
  try {
    const int64_t count = g->get_execution_plan_count();
    plan->offered = static_cast<int>(count);
    for (int64_t i = 0; i < count && index < 0; ++i) {
      std::string name;
      int64_t id = -1;
      std::map<int, int64_t> knobs;
      if (g->get_plan_name_at_index(i, name).is_good() &&
          ParseCudnnEngineTag(name, &id, &knobs) && id == engine_id &&
          knobs == knob_choices) {
        index = i;
        built_name = name;
      }
    }
    if (index < 0) {
      return absl::NotFoundError(
          "not among the heuristics' candidates for this shape");
    }
    // A barred note or too much workspace makes the build fail, as for the
    // candidates when timing.
    fe::error_t fe_status = g->build_plan_at_index(index);
    if (fe_status.is_bad()) {
      return absl::NotFoundError(
          absl::StrCat("building its plan: ", FeMessage(fe_status)));
    }
    if (g->get_workspace_size_plan_at_index(index, ws).is_bad() ||
        ws > WorkspaceLimit()) {
      return absl::OutOfRangeError(absl::StrCat(
          "needs ", ws, " B of workspace, more than ", WorkspaceLimit()));
    }
  } catch (const std::exception& ex) {
    return absl::UnknownError(
        absl::StrCat("cudnn_frontend threw: ", ex.what()));
  }
  // Run it (timed, for Describe): an engine that builds but fails to run is
  // not used either.
  std::unordered_map<int64_t, void*> pack =
      VariantPack(e, x, legacy_->weights(), bias, z, y);
  absl::StatusOr<float> ms =
      TimeOnStream(ctx_->stream(), options_.timing_runs, [&] {
        return ExecutePlan(*g, ctx_->cudnn(), pack, ctx_->workspace(), index);
      });
  if (!ms.ok()) {
    const cudaError_t err = cudaStreamSynchronize(ctx_->stream());
    if (err != cudaSuccess) {
      // A fault leaves the context broken for everything after it.
      return absl::InternalError(
          absl::StrCat("GraphConv2d ", name_, ": running the cached engine ",
                       choice.engine, ": ", ms.status().message(),
                       " (CUDA: ", cudaGetErrorString(err), ")"));
    }
    (void)cudaGetLastError();
    return absl::AbortedError(
        absl::StrCat("running it: ", ms.status().message()));
  }
  plan->graph = std::move(g);
  plan->plan_index = index;
  plan->workspace = ws;
  plan->engine = built_name;
  plan->graph_ms = *ms;
  plan->built = 1;
  plan->timed = 1;
  plan->from_cache = true;
  return absl::OkStatus();
}

absl::StatusOr<GraphConv2d::Plan*> GraphConv2d::PlanFor(
    Epilogue e, const void* x, int n, int h, int w, const void* bias,
    const void* z, void* y) {
  const auto key = std::make_tuple(static_cast<int>(e), n, h, w);
  auto it = plans_->by_shape.find(key);
  if (it != plans_->by_shape.end()) return it->second.get();

  cudaStream_t stream = ctx_->stream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  RETURN_IF_ERROR(CudaStatus(cudaStreamIsCapturing(stream, &capture),
                             "cudaStreamIsCapturing"));
  if (capture != cudaStreamCaptureStatusNone) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GraphConv2d ", name_, ": shape ", n, "x", h, "x", w,
        " first seen during CUDA graph capture; run each shape eagerly first "
        "(cuda::GraphCache does)"));
  }
  const auto t_choose = std::chrono::steady_clock::now();
  auto since_ms = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t)
        .count();
  };
  auto plan = std::make_unique<Plan>();
  plan->epilogue = e;
  plan->n = n;
  plan->h = h;
  plan->w = w;
  const Conv2d::Shape& s = legacy_->shape();
  cudnnHandle_t handle = ctx_->cudnn();
  void* workspace = ctx_->workspace();
  const int64_t workspace_limit = WorkspaceLimit();
  ConvEngineCache* cache = options_.engine_cache.get();
  const ConvLayerKey layer_key = LayerKey(e, n, h, w);
  // Keeps this shape's choice, records it in the engine cache (when it was
  // not read from there) and returns it.
  auto keep = [&]() -> absl::StatusOr<Plan*> {
    plan->choose_ms = since_ms(t_choose);
    // Small workspaces (tile counters and flags of the warp-specialised
    // engines: 131 B for most trunk layers on the H200) are the plan's own,
    // not the start of the shared workspace that the next layer's engine
    // initialises. Tried first against ADR 0078's fault (consecutive
    // layers' engines used the same bytes there); alone it did not cure it,
    // the layer fence did, and the fence was
    // measured with these private workspaces. Large workspaces (operand
    // copies, megabytes) stay shared, so the arena grows by at most
    // 36 × kPrivateWorkspaceMax.
    if (plan->on_engine() && plan->workspace > 0 &&
        plan->workspace <= kPrivateWorkspaceMax) {
      ASSIGN_OR_RETURN(plan->private_workspace,
                       DeviceBuffer::Allocate(
                           ctx_->arena(), static_cast<size_t>(plan->workspace),
                           ctx_->owner() + "/graph_conv_workspaces"));
      // Zeroed once, as the arena's memory may hold anything: an engine
      // whose counters reset themselves after each run needs them zero
      // before its first.
      RETURN_IF_ERROR(CudaStatus(
          cudaMemsetAsync(plan->private_workspace.data(), 0,
                          static_cast<size_t>(plan->workspace), ctx_->stream()),
          "zeroing a graph convolution's workspace"));
    }
    if (cache != nullptr && !plan->from_cache) {
      cache->Record(environment_, layer_key,
                    {.engine = plan->on_engine() ? plan->engine : "legacy",
                     .ms = plan->on_engine() ? plan->graph_ms : plan->legacy_ms,
                     .workspace = plan->workspace});
    }
    Plan* out = plan.get();
    plans_->by_shape.emplace(key, std::move(plan));
    return out;
  };

  if (cache != nullptr) {
    if (std::optional<ConvEngineChoice> cached =
            cache->Find(environment_, layer_key)) {
      const absl::Status st = PlanFromCache(*cached, plan.get(), x, bias, z, y);
      if (st.ok()) return keep();
      // Internal: the device faulted; nothing after this can run.
      if (absl::IsInternal(st)) return st;
      ReportDiagnostic(
          absl::StrCat("cuda:", ctx_->arena()->device(), " embedding"),
          absl::StrCat("conv engine cache ", cache->path(), ": the engine ",
                       cached->engine, " recorded for ", name_, " on ", n, "x",
                       s.in_channels, "x", h, "x", w, " ",
                       EpilogueName(static_cast<int>(e)), " is not used (",
                       st.message(), "); timing the candidates instead"));
      cache->Forget(environment_, layer_key);
      *plan = Plan();
      plan->epilogue = e;
      plan->n = n;
      plan->h = h;
      plan->w = w;
    }
  }

  absl::StatusOr<std::shared_ptr<fe::graph::Graph>> graph =
      MakeGraph(handle, s, static_cast<int>(e), n, h, w, OutH(h), OutW(w),
                workspace_limit);
  if (!graph.ok() && !absl::IsUnimplemented(graph.status())) {
    return absl::Status(
        graph.status().code(),
        absl::StrCat("GraphConv2d ", name_, ": ", graph.status().message()));
  }
  std::string reasons;
  if (!graph.ok()) {
    reasons = std::string(graph.status().message());
  } else {
    // Build the candidates in the heuristics' order (deduplicated: modes A,
    // B and the fallback list overlap), at most max_candidates, then time
    // each with this call's tensors.
    std::shared_ptr<fe::graph::Graph> g = *graph;
    std::vector<int64_t> built;
    std::set<std::string> seen;
    try {
      const int64_t count = g->get_execution_plan_count();
      plan->offered = static_cast<int>(count);
      // Engines cuDNN compiles at run time (NVRTC) take up to a second each
      // to build: with runtime_compilation off they are tried only when no
      // precompiled engine could be built (second pass).
      auto runtime_compiled = [&](int64_t i) {
        std::vector<fe::BehaviorNote_t> notes;
        if (g->get_behavior_notes_for_plan_at_index(i, notes).is_bad()) {
          return false;
        }
        return std::find(notes.begin(), notes.end(),
                         fe::BehaviorNote_t::RUNTIME_COMPILATION) !=
               notes.end();
      };
      for (int pass = 0; pass < 2 && built.empty(); ++pass) {
        if (pass == 1 && options_.runtime_compilation) break;
        for (int64_t i = 0; i < count && static_cast<int>(built.size()) <
                                             options_.max_candidates;
             ++i) {
          const bool rtc = runtime_compiled(i);
          if (pass == 0 && rtc && !options_.runtime_compilation) continue;
          if (pass == 1 && !rtc) continue;
          std::string engine;
          if (g->get_plan_name_at_index(i, engine).is_bad()) continue;
          if (!seen.insert(engine).second) continue;
          fe::error_t be = g->build_plan_at_index(i);
          if (be.is_bad()) {
            ++plan->not_built;
            if (reasons.size() < 2000) {
              absl::StrAppend(&reasons, " [", engine, ": ", be.get_message(),
                              "]");
            }
            continue;
          }
          built.push_back(i);
          if (rtc) ++plan->runtime_compiled;
          // Stop once the budget is spent and something was built.
          if (since_ms(t_choose) > options_.build_budget_ms) break;
        }
      }
    } catch (const std::exception& ex) {
      absl::StrAppend(&reasons, " [cudnn_frontend threw: ", ex.what(), "]");
    }
    plan->built = static_cast<int>(built.size());
    plan->not_built_reasons = reasons.substr(0, 400);
    float best = std::numeric_limits<float>::infinity();
    for (int64_t i : built) {
      int64_t ws = 0;
      std::string engine;
      try {
        if (g->get_workspace_size_plan_at_index(i, ws).is_bad() ||
            ws > workspace_limit) {
          continue;
        }
        (void)g->get_plan_name_at_index(i, engine);
      } catch (const std::exception& ex) {
        continue;
      }
      std::unordered_map<int64_t, void*> pack =
          VariantPack(static_cast<int>(e), x, legacy_->weights(), bias, z, y);
      absl::StatusOr<float> ms = TimeOnStream(
          stream, options_.timing_runs,
          [&] { return ExecutePlan(*g, handle, pack, workspace, i); });
      if (!ms.ok()) {
        // An engine that refuses to run is skipped. A kernel that faulted
        // leaves the context broken for everything after it: surface that.
        const cudaError_t err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess) {
          return absl::InternalError(absl::StrCat(
              "GraphConv2d ", name_, ": timing ", engine, ": ",
              ms.status().message(), " (CUDA: ", cudaGetErrorString(err), ")"));
        }
        (void)cudaGetLastError();
        absl::StrAppend(&reasons, " [", engine,
                        " failed: ", ms.status().message(), "]");
        continue;
      }
      ++plan->timed;
      plan->timed_list.push_back({engine, *ms, ws});
      if (*ms < best) {
        best = *ms;
        plan->plan_index = i;
        plan->workspace = ws;
        plan->engine = engine;
      }
    }
    if (plan->plan_index >= 0) {
      plan->graph = g;
      plan->graph_ms = best;
    } else if (reasons.empty()) {
      reasons = absl::StrCat(plan->offered,
                             " candidates, none deterministic, built and "
                             "within the workspace");
    }
  }
  if (!plan->on_engine()) {
    plan->why_legacy = absl::StrCat("no graph engine:", reasons);
  }
  return keep();
}

absl::Status GraphConv2d::Forward(const void* x, int n, int h, int w, void* y) {
  return ForwardBiasRelu(x, n, h, w, nullptr, nullptr, y);
}

absl::Status GraphConv2d::ForwardBiasRelu(const void* x, int n, int h, int w,
                                          const void* bias, const void* z,
                                          void* y) {
  if (z != nullptr && z == y) {
    return absl::InternalError(absl::StrCat(
        "GraphConv2d ", name_, ": the residual must not alias the output"));
  }
  if (x == y) {
    return absl::InternalError(absl::StrCat(
        "GraphConv2d ", name_, ": the input must not alias the output"));
  }
  // Forward() passes no bias: the plain convolution.
  const Epilogue e = bias == nullptr ? Epilogue::kNone
                     : z == nullptr  ? Epilogue::kBiasRelu
                                     : Epilogue::kBiasAddRelu;
  if (bias == nullptr && z != nullptr) {
    return absl::InternalError(absl::StrCat(
        "GraphConv2d ", name_, ": a residual needs the bias epilogue"));
  }
  ASSIGN_OR_RETURN(Plan * plan, PlanFor(e, x, n, h, w, bias, z, y));
  if (plan->graph == nullptr) return RunLegacy(e, x, n, h, w, bias, z, y);
  std::unordered_map<int64_t, void*> pack =
      VariantPack(static_cast<int>(e), x, legacy_->weights(), bias, z, y);
  // The layer fence (see the header; ADR 0078).
  RETURN_IF_ERROR(
      CudaStatus(cudaMemsetAsync(plans_->fence.data(), 0, 4, ctx_->stream()),
                 "the fence before a graph convolution"));
  void* workspace = plan->private_workspace.data() != nullptr
                        ? plan->private_workspace.data()
                        : ctx_->workspace();
  const absl::Status st = ExecutePlan(*plan->graph, ctx_->cudnn(), pack,
                                      workspace, plan->plan_index);
  if (!st.ok()) {
    return absl::InternalError(absl::StrCat("GraphConv2d ", name_, " (",
                                            plan->engine, "): ", st.message()));
  }
  return absl::OkStatus();
}

std::string GraphConv2d::Line(const Plan& p) const {
  const Conv2d::Shape& s = legacy_->shape();
  std::string line = absl::StrCat(
      "graph conv ", name_, " ", s.out_channels, "<-", s.in_channels, " ",
      s.kernel_h, "x", s.kernel_w, "/", s.stride_h, " on ", p.n, "x",
      s.in_channels, "x", p.h, "x", p.w, " ",
      EpilogueName(static_cast<int>(p.epilogue)), " tf32", ": ");
  // Multiply-adds of this shape, for the throughput of each timing.
  const double flop = 2.0 * p.n * s.out_channels * s.in_channels * s.kernel_h *
                      s.kernel_w * double{OutH(p.h)} * OutW(p.w);
  auto tflops = [&](float ms) {
    return absl::StrFormat("%.1f TFLOP/s", flop / (ms * 1e-3) / 1e12);
  };
  if (p.on_engine() && p.from_cache) {
    absl::StrAppend(&line, "graph ", p.engine, " (from the engine cache; ",
                    p.graph_ms, " ms = ", tflops(p.graph_ms), ", ws ",
                    p.workspace, " B)");
  } else if (p.on_engine()) {
    absl::StrAppend(&line, "graph ", p.engine, " (", p.graph_ms,
                    " ms = ", tflops(p.graph_ms), ", ws ", p.workspace, " B; ",
                    p.timed, " of ", p.offered, " candidates timed, ",
                    p.runtime_compiled, " of them runtime-compiled");
    if (p.legacy_ms >= 0) {
      absl::StrAppend(&line, "; legacy ", p.legacy_ms,
                      " ms = ", tflops(p.legacy_ms));
    }
    absl::StrAppend(&line, ")");
  } else {
    absl::StrAppend(&line, "legacy (", p.why_legacy, ")");
    if (p.legacy_ms > 0) {
      absl::StrAppend(&line, " legacy ", tflops(p.legacy_ms), ", graph ",
                      tflops(p.graph_ms));
    }
  }
  // The evidence behind a timed choice: every candidate's time and
  // workspace, and what did not build.
  if (!p.timed_list.empty()) {
    absl::StrAppend(&line, " {timed:");
    for (const Plan::Timed& t : p.timed_list) {
      absl::StrAppend(&line, " ", t.engine,
                      absl::StrFormat(" %.4f ms ws %.1f MB;", t.ms,
                                      t.workspace / 1048576.0));
    }
    if (p.not_built > 0) {
      absl::StrAppend(&line, " not built: ", p.not_built, ":",
                      p.not_built_reasons);
    }
    absl::StrAppend(&line, "}");
  }
  absl::StrAppend(&line, " [chosen in ", static_cast<int>(p.choose_ms), " ms]");
  return line;
}

std::vector<std::string> GraphConv2d::Describe() const {
  std::vector<std::string> out;
  for (const auto& [key, p] : plans_->by_shape) out.push_back(Line(*p));
  return out;
}

int GraphConv2d::graph_shapes() const {
  int k = 0;
  for (const auto& [key, p] : plans_->by_shape) k += p->on_engine();
  return k;
}

int GraphConv2d::legacy_shapes() const {
  return static_cast<int>(plans_->by_shape.size()) - graph_shapes();
}

int GraphConv2d::cached_shapes() const {
  int k = 0;
  for (const auto& [key, p] : plans_->by_shape) {
    k += p->from_cache;
  }
  return k;
}

}  // namespace diarization::models::cuda

#else  // no cuDNN frontend headers in this build

namespace diarization::models::cuda {

struct GraphConv2d::Plans {};

absl::StatusOr<std::unique_ptr<GraphConv2d>> GraphConv2d::Create(
    CudaContext*, Conv2d*, std::string name, const Options&) {
  return absl::FailedPreconditionError(absl::StrCat(
      "GraphConv2d ", name,
      ": this binary was built without the cuDNN frontend headers; run "
      "tools/third_party/get_cudnn_frontend.sh and rebuild (ADR 0072), or "
      "use conv_api \"legacy\""));
}
GraphConv2d::~GraphConv2d() = default;
absl::Status GraphConv2d::Forward(const void*, int, int, int, void*) {
  return absl::FailedPreconditionError("GraphConv2d: no cuDNN frontend");
}
bool GraphConv2d::Built() { return false; }
absl::Status GraphConv2d::ForwardBiasRelu(const void*, int, int, int,
                                          const void*, const void*, void*) {
  return absl::FailedPreconditionError("GraphConv2d: no cuDNN frontend");
}
std::vector<std::string> GraphConv2d::Describe() const { return {}; }
int GraphConv2d::graph_shapes() const { return 0; }
int GraphConv2d::legacy_shapes() const { return 0; }
int GraphConv2d::cached_shapes() const { return 0; }
absl::StatusOr<ConvEngineEnvironment> GraphConv2d::Environment(int) {
  return absl::FailedPreconditionError("GraphConv2d: no cuDNN frontend");
}

}  // namespace diarization::models::cuda

#endif
