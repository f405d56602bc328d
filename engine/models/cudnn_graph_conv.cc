#include "engine/models/cudnn_graph_conv.h"

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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda_precision.h"
#include "engine/models/cuda_status.h"

// The frontend's headers come from tools/third_party/get_cudnn_frontend.sh
// (scripts/test.sh and tools/device/pack.sh run it). A checkout built
// without them still builds: only conv_api "graph" / "fastest" then fail,
// at load, saying so (the #else branch at the end of this file).
#if __has_include(<cudnn_frontend.h>)
#include <cudnn_frontend.h>

namespace diarization::models::cuda {
namespace {

namespace fe = cudnn_frontend;

constexpr int64_t kUidX = 1, kUidW = 2, kUidBias = 3, kUidZ = 4, kUidY = 5;

// NHWC strides of a (n, c, h, w) tensor, in the frontend's NCHW dim order.
std::vector<int64_t> NhwcStrides(int64_t c, int64_t h, int64_t w) {
  return {c * h * w, 1, w * c, c};
}

std::string FeMessage(fe::error_t e) {
  return absl::StrCat("cudnn_frontend error ", static_cast<int>(e.get_code()),
                      ": ", e.get_message());
}

// Runs `f` once (warm-up), then `runs` times between CUDA events on
// `stream`; returns the fastest run in milliseconds. The stream must not be
// capturing.
absl::StatusOr<float> TimeOnStream(cudaStream_t stream, int runs,
                                   const std::function<absl::Status()>& f) {
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

struct GraphConv2d::Plan {
  Epilogue epilogue = Epilogue::kNone;
  int n = 0, h = 0, w = 0;
  // Null: this shape runs on the legacy call.
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t plan_index = -1;
  int64_t workspace = 0;
  std::string engine;
  std::string why_legacy;
  float graph_ms = -1, legacy_ms = -1;
  int offered = 0, built = 0, timed = 0;
  // Of the built candidates, those cuDNN compiled at run time.
  int runtime_compiled = 0;
  // Host wall time of the choice (building and timing the candidates).
  double choose_ms = 0;
  // > 0: the engine was not timed here but taken from the plan of this
  // batch size (same epilogue, height and width).
  int reused_from = 0;
};

struct GraphConv2d::Plans {
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<Plan>> by_shape;
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

// The operation graph of one convolution and its epilogue, its operation
// graph built and the heuristics' candidates queried and filtered (not yet
// built). Any cudnn_frontend failure comes back as Unimplemented: the graph
// path does not cover this shape.
absl::StatusOr<std::shared_ptr<fe::graph::Graph>> MakeGraph(
    cudnnHandle_t handle, const Conv2d::Shape& s, int epilogue, int n, int h,
    int w, int out_h, int out_w, size_t workspace_bytes) {
  try {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::FLOAT)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    const int64_t c = s.in_channels, k = s.out_channels;
    auto x = g->tensor(fe::graph::Tensor_attributes()
                           .set_name("x")
                           .set_uid(kUidX)
                           .set_data_type(fe::DataType_t::FLOAT)
                           .set_dim({n, c, h, w})
                           .set_stride(NhwcStrides(c, h, w)));
    // Conv2d's channels-last filter: (out, kh, kw, in).
    auto wt =
        g->tensor(fe::graph::Tensor_attributes()
                      .set_name("w")
                      .set_uid(kUidW)
                      .set_data_type(fe::DataType_t::FLOAT)
                      .set_dim({k, c, s.kernel_h, s.kernel_w})
                      .set_stride(NhwcStrides(c, s.kernel_h, s.kernel_w)));
    auto out = g->conv_fprop(x, wt,
                             fe::graph::Conv_fprop_attributes()
                                 .set_name("conv")
                                 .set_padding({s.pad_h, s.pad_w})
                                 .set_stride({s.stride_h, s.stride_w})
                                 .set_dilation({1, 1}));
    if (epilogue != 0) {
      auto bias = g->tensor(fe::graph::Tensor_attributes()
                                .set_name("bias")
                                .set_uid(kUidBias)
                                .set_data_type(fe::DataType_t::FLOAT)
                                .set_dim({1, k, 1, 1})
                                .set_stride({k, 1, k, k}));
      out = g->pointwise(out, bias,
                         fe::graph::Pointwise_attributes()
                             .set_name("bias_add")
                             .set_mode(fe::PointwiseMode_t::ADD));
      if (epilogue == 2) {
        auto z = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("z")
                               .set_uid(kUidZ)
                               .set_data_type(fe::DataType_t::FLOAT)
                               .set_dim({n, k, out_h, out_w})
                               .set_stride(NhwcStrides(k, out_h, out_w)));
        out = g->pointwise(out, z,
                           fe::graph::Pointwise_attributes()
                               .set_name("residual_add")
                               .set_mode(fe::PointwiseMode_t::ADD));
      }
      out = g->pointwise(
          out, fe::graph::Pointwise_attributes().set_name("relu").set_mode(
                   fe::PointwiseMode_t::RELU_FWD));
    }
    out->set_output(true)
        .set_uid(kUidY)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({n, k, out_h, out_w})
        .set_stride(NhwcStrides(k, out_h, out_w));

    // A graph the frontend refuses is reported like a missing engine: the
    // layer stays on the legacy call and the reason is in its log line
    // (the GPU test fails if most layers end up there).
    fe::error_t e = g->validate();
    if (e.is_bad()) {
      return absl::UnimplementedError(
          absl::StrCat("validating the graph: ", FeMessage(e)));
    }
    e = g->build_operation_graph(handle);
    if (e.is_bad()) {
      return absl::UnimplementedError(
          absl::StrCat("building the operation graph: ", FeMessage(e)));
    }
    e = g->create_execution_plans(
        {fe::HeurMode_t::A, fe::HeurMode_t::B, fe::HeurMode_t::FALLBACK});
    if (e.is_bad()) {
      return absl::UnimplementedError(
          absl::StrCat("no heuristics candidates: ", FeMessage(e)));
    }
    // The project's rules: deterministic kernels only, and only what fits
    // the arena's workspace. TF32 is the precision asked for, so engines
    // that down-convert the float inputs (to FP16/BF16) or reduce in less
    // than FP32 are out too (PyTorch's cuDNN v8 path drops them likewise).
    g->deselect_numeric_notes(
        {fe::NumericalNote_t::NONDETERMINISTIC,
         fe::NumericalNote_t::DOWN_CONVERT_INPUTS,
         fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION});
    g->deselect_workspace_greater_than(static_cast<int64_t>(workspace_bytes));
    return g;
  } catch (const std::exception& ex) {
    return absl::UnimplementedError(
        absl::StrCat("cudnn_frontend threw: ", ex.what()));
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
  if (!s.channels_last || s.half) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphConv2d ", name,
        ": the graph path runs NHWC float32 tensors only (the layer is ",
        s.channels_last ? "NHWC" : "NCHW", s.half ? ", FP16" : ", float32",
        "); use conv_api \"legacy\" for this precision"));
  }
  if (ctx->precision() != Precision::kTf32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphConv2d ", name, ": precision ", PrecisionName(ctx->precision()),
        " is not covered by the graph path (TF32 only)"));
  }
  if (options.max_candidates < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GraphConv2d ", name, ": max_candidates must be >= 1"));
  }
  std::unique_ptr<GraphConv2d> conv(new GraphConv2d());
  conv->ctx_ = ctx;
  conv->legacy_ = legacy;
  conv->name_ = std::move(name);
  conv->options_ = options;
  conv->plans_ = std::make_unique<Plans>();
  return conv;
}

GraphConv2d::~GraphConv2d() = default;

absl::Status GraphConv2d::RunLegacy(Epilogue e, const void* x, int n, int h,
                                    int w, const void* bias, const void* z,
                                    void* y) {
  if (e == Epilogue::kNone) return legacy_->Forward(x, n, h, w, y);
  return legacy_->ForwardBiasRelu(x, n, h, w, bias, z, y);
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
  void* weights = const_cast<void*>(legacy_->weights());

  absl::StatusOr<std::shared_ptr<fe::graph::Graph>> graph =
      MakeGraph(handle, s, static_cast<int>(e), n, h, w, OutH(h), OutW(w),
                ctx_->workspace_bytes());
  if (!graph.ok() && !absl::IsUnimplemented(graph.status())) {
    return absl::Status(
        graph.status().code(),
        absl::StrCat("GraphConv2d ", name_, ": ", graph.status().message()));
  }
  std::string reasons;
  // The engine timed for the same epilogue, height and width at the
  // largest batch size >= n, if any (the model times every layer at its
  // largest batch when it loads): build that engine for this shape instead
  // of timing the candidates again.
  const Plan* donor = nullptr;
  if (graph.ok() && options_.reuse_across_batches) {
    for (const auto& [k, p] : plans_->by_shape) {
      if (std::get<0>(k) == static_cast<int>(e) && std::get<2>(k) == h &&
          std::get<3>(k) == w && p->n >= n && p->graph != nullptr &&
          p->reused_from == 0 && (donor == nullptr || p->n > donor->n)) {
        donor = p.get();
      }
    }
  }
  if (donor != nullptr) {
    std::shared_ptr<fe::graph::Graph> g = *graph;
    try {
      const int64_t count = g->get_execution_plan_count();
      plan->offered = static_cast<int>(count);
      for (int64_t i = 0; i < count; ++i) {
        std::string engine;
        if (g->get_plan_name_at_index(i, engine).is_bad() ||
            engine != donor->engine) {
          continue;
        }
        int64_t ws = 0;
        if (g->build_plan_at_index(i).is_bad() ||
            g->get_workspace_size_plan_at_index(i, ws).is_bad() ||
            ws > static_cast<int64_t>(ctx_->workspace_bytes())) {
          break;
        }
        plan->graph = g;
        plan->plan_index = i;
        plan->workspace = ws;
        plan->engine = engine;
        plan->built = 1;
        plan->reused_from = donor->n;
        break;
      }
    } catch (const std::exception& ex) {
      plan->graph.reset();
    }
    if (plan->graph != nullptr) {
      plan->choose_ms = since_ms(t_choose);
      Plan* out = plan.get();
      plans_->by_shape.emplace(key, std::move(plan));
      return out;
    }
    // Not offered or not buildable for this batch size: time the
    // candidates as for a new shape, on a fresh graph.
    graph = MakeGraph(handle, s, static_cast<int>(e), n, h, w, OutH(h), OutW(w),
                      ctx_->workspace_bytes());
  }
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
    float best = std::numeric_limits<float>::infinity();
    for (int64_t i : built) {
      int64_t ws = 0;
      std::string engine;
      try {
        if (g->get_workspace_size_plan_at_index(i, ws).is_bad() ||
            ws > static_cast<int64_t>(ctx_->workspace_bytes())) {
          continue;
        }
        (void)g->get_plan_name_at_index(i, engine);
      } catch (const std::exception& ex) {
        continue;
      }
      auto run = [&]() -> absl::Status {
        std::unordered_map<int64_t, void*> pack = {
            {kUidX, const_cast<void*>(x)}, {kUidW, weights}, {kUidY, y}};
        if (e != Epilogue::kNone) pack[kUidBias] = const_cast<void*>(bias);
        if (e == Epilogue::kBiasAddRelu) pack[kUidZ] = const_cast<void*>(z);
        try {
          fe::error_t xe = g->execute_plan_at_index(handle, pack, workspace, i);
          if (xe.is_bad()) return absl::InternalError(FeMessage(xe));
        } catch (const std::exception& ex) {
          return absl::InternalError(ex.what());
        }
        return absl::OkStatus();
      };
      absl::StatusOr<float> ms =
          TimeOnStream(stream, options_.timing_runs, run);
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
  if (plan->graph == nullptr) {
    plan->why_legacy = absl::StrCat("no graph engine:", reasons);
  } else if (options_.compare_legacy) {
    ASSIGN_OR_RETURN(plan->legacy_ms,
                     TimeOnStream(stream, options_.timing_runs, [&] {
                       return RunLegacy(e, x, n, h, w, bias, z, y);
                     }));
    if (plan->legacy_ms < plan->graph_ms) {
      plan->why_legacy =
          absl::StrCat("faster than the best graph engine ", plan->engine, " (",
                       plan->legacy_ms, " vs ", plan->graph_ms, " ms)");
      plan->graph.reset();
    }
  }
  plan->choose_ms = since_ms(t_choose);
  Plan* out = plan.get();
  plans_->by_shape.emplace(key, std::move(plan));
  return out;
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
  std::unordered_map<int64_t, void*> pack = {
      {kUidX, const_cast<void*>(x)},
      {kUidW, const_cast<void*>(legacy_->weights())},
      {kUidY, y}};
  if (e != Epilogue::kNone) pack[kUidBias] = const_cast<void*>(bias);
  if (e == Epilogue::kBiasAddRelu) pack[kUidZ] = const_cast<void*>(z);
  try {
    fe::error_t xe = plan->graph->execute_plan_at_index(
        ctx_->cudnn(), pack, ctx_->workspace(), plan->plan_index);
    if (xe.is_bad()) {
      return absl::InternalError(absl::StrCat(
          "GraphConv2d ", name_, " (", plan->engine, "): ", FeMessage(xe)));
    }
  } catch (const std::exception& ex) {
    return absl::InternalError(absl::StrCat("GraphConv2d ", name_, " (",
                                            plan->engine, "): ", ex.what()));
  }
  return absl::OkStatus();
}

std::string GraphConv2d::Line(const Plan& p) const {
  const Conv2d::Shape& s = legacy_->shape();
  std::string line =
      absl::StrCat("graph conv ", name_, " ", s.out_channels, "<-",
                   s.in_channels, " ", s.kernel_h, "x", s.kernel_w, "/",
                   s.stride_h, " on ", p.n, "x", s.in_channels, "x", p.h, "x",
                   p.w, " ", EpilogueName(static_cast<int>(p.epilogue)), ": ");
  // Multiply-adds of this shape, for the throughput of each timing.
  const double flop = 2.0 * p.n * s.out_channels * s.in_channels * s.kernel_h *
                      s.kernel_w * double{OutH(p.h)} * OutW(p.w);
  auto tflops = [&](float ms) {
    return absl::StrFormat("%.1f TFLOP/s", flop / (ms * 1e-3) / 1e12);
  };
  if (p.graph != nullptr && p.reused_from > 0) {
    absl::StrAppend(&line, "graph ", p.engine, " (the engine timed at batch ",
                    p.reused_from, ", ws ", p.workspace, " B)");
  } else if (p.graph != nullptr) {
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
  for (const auto& [key, p] : plans_->by_shape) k += p->graph != nullptr;
  return k;
}

int GraphConv2d::legacy_shapes() const {
  return static_cast<int>(plans_->by_shape.size()) - graph_shapes();
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
absl::Status GraphConv2d::ForwardBiasRelu(const void*, int, int, int,
                                          const void*, const void*, void*) {
  return absl::FailedPreconditionError("GraphConv2d: no cuDNN frontend");
}
std::vector<std::string> GraphConv2d::Describe() const { return {}; }
int GraphConv2d::graph_shapes() const { return 0; }
int GraphConv2d::legacy_shapes() const { return 0; }

}  // namespace diarization::models::cuda

#endif
