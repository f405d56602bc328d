// The kernel qualification harness (README.md beside this): for every
// (kernel, layer, batch, precision) tuple production may select, on this
// GPU, with fresh random inputs each run and the output poisoned (NaN)
// before every launch:
//  - parity against a float64 CPU reference (and against the library or
//    previous path where production has one);
//  - bitwise determinism across runs;
//  - compute-sanitizer results (run by bench/gpu/parts/qualify.sh on --small,
//  passed in
//    with --sanitizer_results);
//  - A/B/A/B timing against the library / previous path, no-slowdown bar.
// The cluster LSTM is run at every group size (windows per cluster); its
// tuple records the fastest group that passes, which production launches.
// Writes the coverage file (--out, JSON) that production reads once it is
// committed as kernels/qualification.json.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/models/cuda/cuda_context.h"
#include "engine/models/cuda/cuda_precision.h"
#include "engine/models/cuda/device_arena_cuda.h"
#include "engine/models/cuda/embedding/cuda_conv2d.h"
#include "engine/models/cuda/embedding/cuda_embedding_model.h"
#include "engine/models/cuda/embedding/cudnn_graph_conv.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_model.h"
#include "engine/models/fbank.h"
#include "engine/models/format/random_model.h"
#include "engine/models/format/safetensors.h"
#include "engine/models/model_interfaces.h"
#include "kernels/conv3x3_c32.h"
#include "kernels/lstm.h"
#include "kernels/lstm_cluster.h"
#include "kernels/lstm_reference.h"
#include "kernels/nn_ops.h"
#include "kernels/qualification_data.h"
#include "kernels/sinc_conv.h"
#include "kernels/stats_pool.h"
#include "kernels/window_gather.h"
#include "nlohmann/json.hpp"
#include "testing/conv3x3_reference.h"
#include "testing/sinc_conv_reference.h"
#include "testing/stats_pool_reference.h"

ABSL_FLAG(std::string, out, "", "coverage file to write (JSON)");
ABSL_FLAG(std::string, groups, "lstm,sinc,epilogues,fbank,conv32,segmentation",
          "what to run: lstm, sinc, epilogues (stats pool, nn_ops), fbank, "
          "conv32 (the trunk's layer1 convolutions, kernels/conv3x3_c32), "
          "segmentation (the whole network, cluster vs resident LSTM)");
ABSL_FLAG(bool, small, false,
          "small sizes and no timing (for compute-sanitizer)");
ABSL_FLAG(std::string, lstm_batches,
          "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,"
          "26,27,28,29,30,31,32,48,64,96,128,192,256",
          "batch sizes of the LSTM tuples");
ABSL_FLAG(std::string, segmentation_batches, "1,2,4,8,32,256",
          "batch sizes of the whole-network A/B (not tuples)");
ABSL_FLAG(int, pairs, 4, "A/B pairs per timing (A B A B ...)");
ABSL_FLAG(double, slowdown_tolerance, 0.02,
          "a custom kernel qualifies when its median time is at most "
          "(1 + this) x the baseline's");
ABSL_FLAG(
    std::string, sanitizer_results, "",
    "file of lines '<group> <tool> PASS|FAIL' from bench/gpu/parts/qualify.sh; "
    "without it no tuple qualifies");
ABSL_FLAG(std::string, driver, "", "driver version as nvidia-smi prints it");
ABSL_FLAG(std::string, git_commit, "", "commit the binaries were built from");
ABSL_FLAG(bool, library, true, "also run the library paths (cuDNN)");
ABSL_FLAG(std::string, segmentation_weights, "",
          "segmentation-3.0 weights (safetensors) for the whole-network "
          "check (cluster vs resident LSTM); empty: random weights, judged "
          "against a looser bound (see RunSegmentation)");

namespace diarization {
namespace {

using nlohmann::json;

std::mt19937& Rng() {
  static std::mt19937 rng(std::random_device{}());
  return rng;
}

std::vector<float> Random(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(Rng());
  return v;
}

bool Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("CUDA ERROR %s: %s\n", what, cudaGetErrorString(e));
    return false;
  }
  return true;
}

// A device buffer (plain cudaMalloc: the harness measures kernels, not the
// arena).
struct Dev {
  float* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    Check(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)),
          "cudaMalloc");
    Poison();
  }
  explicit Dev(const std::vector<float>& h) : Dev(h.size()) {
    Check(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice),
          "upload");
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  // NaN everywhere: an output element a kernel does not write fails parity.
  // Synchronized: cudaMemset runs on the legacy default stream, which does
  // not order against the harness's non-blocking streams.
  void Poison() {
    Check(cudaMemset(p, 0xff, n * sizeof(float)), "poison");
    Check(cudaDeviceSynchronize(), "poison sync");
  }
  std::vector<float> Host() const {
    std::vector<float> h(n);
    Check(cudaDeviceSynchronize(), "sync");
    Check(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost),
          "download");
    return h;
  }
};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    m = std::max(m, double(std::abs(a[i] - b[i])));
  }
  return m;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    m = std::max(m, std::abs(a[i] - b[i]));
  }
  return m;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

using Launch = std::function<absl::Status()>;

// Device time of one launch in µs: `inner` launches between two events.
double TimeOnce(const Launch& f, cudaStream_t stream, int inner) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, stream);
  for (int i = 0; i < inner; ++i) {
    if (absl::Status s = f(); !s.ok()) {
      std::printf("LAUNCH FAILED during timing: %s\n", s.ToString().c_str());
    }
  }
  cudaEventRecord(b, stream);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * ms / inner;
}

struct AbTiming {
  std::vector<double> a_us, b_us;
  double a_median = NAN, b_median = NAN;
  json ToJson() const {
    return {{"custom_us", a_us},
            {"baseline_us", b_us},
            {"custom_median_us", a_median},
            {"baseline_median_us", b_median},
            {"speedup", b_median / a_median}};
  }
};

// A B A B ... (pairs of each), after one warm-up launch of each.
AbTiming TimeAB(const Launch& a, const Launch& b, cudaStream_t stream,
                int inner) {
  AbTiming t;
  TimeOnce(a, stream, 1);
  TimeOnce(b, stream, 1);
  for (int i = 0; i < absl::GetFlag(FLAGS_pairs); ++i) {
    t.a_us.push_back(TimeOnce(a, stream, inner));
    t.b_us.push_back(TimeOnce(b, stream, inner));
  }
  t.a_median = Median(t.a_us);
  t.b_median = Median(t.b_us);
  return t;
}

// --- the record

struct Harness {
  json tuples = json::array();
  json end_to_end = json::array();
  std::map<std::string, std::map<std::string, std::string>> sanitizer;
  int failures = 0;  // parity or determinism failures (the exit status)
  // Batch → the cluster LSTM group this run chose (timed runs only): the
  // whole-network A/B runs the cluster kernel with these.
  std::map<int, int> lstm_best_group;

  // "" when every tool passed for `group`, else why not.
  std::string SanitizerProblem(const std::string& group) const {
    static const char* kTools[] = {"memcheck", "racecheck", "initcheck",
                                   "synccheck"};
    auto it = sanitizer.find(group);
    std::string missing;
    for (const char* tool : kTools) {
      std::string r;
      if (it != sanitizer.end()) {
        auto jt = it->second.find(tool);
        if (jt != it->second.end()) r = jt->second;
      }
      if (r != "PASS")
        absl::StrAppend(&missing, missing.empty() ? "" : ", ", tool, " ",
                        r.empty() ? "not run" : r);
    }
    return missing.empty() ? "" : "compute-sanitizer: " + missing;
  }

  // Records one tuple. `speed_ok` is null where no alternative exists.
  void Add(const std::string& kernel, const std::string& layer, int batch,
           const std::string& precision, const std::string& group, double err,
           double tolerance, bool deterministic, const json& extra,
           const std::optional<bool>& speed_ok) {
    std::vector<std::string> why;
    if (!(err <= tolerance))
      why.push_back(absl::StrCat("parity ", err, " > ", tolerance));
    if (!deterministic) why.push_back("not bitwise deterministic");
    const std::string san = SanitizerProblem(group);
    if (!san.empty()) why.push_back(san);
    if (speed_ok.has_value() && !*speed_ok) {
      why.push_back(absl::StrCat("slower than the baseline beyond ",
                                 absl::GetFlag(FLAGS_slowdown_tolerance) * 100,
                                 "%"));
    }
    const bool parity_ok = err <= tolerance && deterministic;
    if (!parity_ok) ++failures;
    json t = {{"kernel", kernel},
              {"layer", layer},
              {"batch", batch},
              {"precision", precision},
              {"max_abs_err_vs_float64",
               std::isfinite(err) ? json(err) : json("inf")},
              {"tolerance", tolerance},
              {"deterministic", deterministic},
              {"qualified", why.empty()}};
    std::string reason;
    for (const auto& w : why)
      absl::StrAppend(&reason, reason.empty() ? "" : "; ", w);
    if (!reason.empty()) t["reason"] = reason;
    for (auto& [k, v] : extra.items()) t[k] = v;
    std::printf(
        "%-13s %-16s batch %4d %s: err %.3g (tol %.1g) det %d -> %s%s\n",
        kernel.c_str(), layer.c_str(), batch, precision.c_str(), err, tolerance,
        int(deterministic),
        why.empty() ? "QUALIFIED" : "not qualified: ", reason.c_str());
    std::fflush(stdout);
    tuples.push_back(std::move(t));
  }
};

bool SpeedOk(const AbTiming& t) {
  return t.a_median <=
         t.b_median * (1 + absl::GetFlag(FLAGS_slowdown_tolerance));
}

std::vector<int> IntList(const std::string& s) {
  std::vector<int> v;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty()))
    v.push_back(std::stoi(std::string(p)));
  return v;
}

// --- LSTM

// The float64 reference of a few windows (first, middle, last): 77 MFLOP
// per window at 589 steps.
using LstmRefs = std::map<int64_t, std::vector<double>>;
LstmRefs LstmReferences(const std::vector<float>& gates,
                        const std::vector<float>& w_hh, int batch, int steps) {
  LstmRefs refs;
  for (int64_t w : std::set<int64_t>{0, batch / 2, batch - 1})
    refs[w] =
        kernels::LstmRecurrenceReference(gates.data(), w_hh.data(), w, steps);
  return refs;
}

double LstmError(const LstmRefs& refs, const std::vector<float>& got,
                 int steps) {
  if (got.empty()) return INFINITY;
  const size_t per = size_t(steps) * 2 * kernels::kLstmHidden;
  double m = 0;
  for (const auto& [w, ref] : refs) {
    for (size_t i = 0; i < per; ++i) {
      const float v = got[w * per + i];
      if (!std::isfinite(v)) return INFINITY;
      m = std::max(m, std::abs(v - ref[i]));
    }
  }
  return m;
}

// Runs `launch` three times into `out` (poisoned before each); first result
// and whether all three had the same bits.
std::pair<std::vector<float>, bool> ThreeRuns(Dev& out, const Launch& launch) {
  std::vector<float> first;
  bool det = true;
  for (int run = 0; run < 3; ++run) {
    out.Poison();
    if (absl::Status s = launch(); !s.ok()) {
      std::printf("launch failed: %s\n", s.ToString().c_str());
      return {{}, false};
    }
    auto got = out.Host();
    if (run == 0)
      first = std::move(got);
    else
      det = det && SameBits(first, got);
  }
  return {first, det};
}

// The cluster kernel's group sizes worth trying at `batch`: 1, 2, 4, 8, 16
// up to the batch rounded up to a power of two (a larger group only leaves
// lanes idle).
std::vector<int> ClusterGroups(int batch) {
  std::vector<int> groups;
  for (int g = 1; g <= 16; g *= 2) {
    groups.push_back(g);
    if (g >= batch) break;
  }
  return groups;
}

// One group size of the cluster kernel at one batch.
struct ClusterGroupRun {
  int group = 0;
  kernels::LstmClusterParams params;
  absl::StatusOr<kernels::LstmClusterPlan> plan;
  double err = INFINITY;
  bool deterministic = false;
  bool same_bits_as_default = false;
  double diff_vs_resident = INFINITY;
  AbTiming timing;  // a: this group, b: the resident kernel just before it
  bool passes(double tolerance) const {
    return plan.ok() && deterministic && err <= tolerance;
  }
};

json FiniteOrInf(double v) { return std::isfinite(v) ? json(v) : json("inf"); }

// Per batch: the resident kernel (the baseline) and the cluster kernel at
// every group size of ClusterGroups, each checked for parity and
// determinism; timed A/B/A/B, each group against the resident kernel run
// just before it (the groups in rotating order). The tuple records the
// fastest group that passes (production launches that one), with every
// group's numbers.
void RunLstm(Harness& h, cudaStream_t stream) {
  const bool small = absl::GetFlag(FLAGS_small);
  const int steps = small ? 17 : 589;
  constexpr double kTolerance = 2e-5;
  const std::vector<int> batches =
      small ? std::vector<int>{1, 3, 9}
            : IntList(absl::GetFlag(FLAGS_lstm_batches));
  for (const int batch : batches) {
    const auto started = std::chrono::steady_clock::now();
    const auto gates =
        Random(size_t(batch) * steps * 2 * kernels::kLstmGates, -1.0f, 1.0f);
    const float k = 1.0f / std::sqrt(float(kernels::kLstmHidden));
    const auto w_hh =
        Random(size_t(2) * kernels::kLstmGates * kernels::kLstmHidden, -k, k);
    Dev d_gates(gates), d_w(kernels::TransposeWhh(w_hh));
    const size_t out_n = size_t(batch) * steps * 2 * kernels::kLstmHidden;
    Dev d_new(out_n), d_old(out_n);
    const kernels::LstmClusterParams base{.gates_in = d_gates.p,
                                          .w_hh_t = d_w.p,
                                          .out = d_new.p,
                                          .batch = batch,
                                          .steps = steps};
    const kernels::LstmRecurrenceParams rp{.gates_in = d_gates.p,
                                           .w_hh_t = d_w.p,
                                           .out = d_old.p,
                                           .batch = batch,
                                           .steps = steps};
    Launch resident = [&] { return kernels::LaunchLstmRecurrence(rp, stream); };
    const absl::StatusOr<kernels::LstmClusterPlan> default_plan =
        kernels::PlanLstmCluster(base);
    const int default_group = default_plan.ok() ? default_plan->group : 0;

    auto [first_old, det_old] = ThreeRuns(d_old, resident);
    const LstmRefs refs = LstmReferences(gates, w_hh, batch, steps);
    const double err_old = LstmError(refs, first_old, steps);

    // The default group first: the others are compared with its bits.
    std::vector<int> order = ClusterGroups(batch);
    std::stable_partition(order.begin(), order.end(),
                          [&](int g) { return g == default_group; });
    std::vector<ClusterGroupRun> runs;
    std::vector<float> default_bits;
    for (const int g : order) {
      ClusterGroupRun r;
      r.group = g;
      r.params = base;
      r.params.group = g;
      r.plan = kernels::PlanLstmCluster(r.params);
      if (r.plan.ok()) {
        auto [got, det] = ThreeRuns(d_new, [&] {
          return kernels::LaunchLstmClusterRecurrence(r.params, stream);
        });
        if (!Check(cudaGetLastError(), "lstm_cluster")) got.clear();
        r.deterministic = det && !got.empty();
        r.err = LstmError(refs, got, steps);
        r.diff_vs_resident = MaxAbsDiff(got, first_old);
        if (g == default_group) default_bits = got;
        r.same_bits_as_default = !got.empty() && SameBits(got, default_bits);
      } else {
        std::printf("LSTM batch %d group %d: %s\n", batch, g,
                    r.plan.status().ToString().c_str());
      }
      // A group that fails is a kernel bug even when another group wins.
      if (!r.passes(kTolerance)) {
        std::printf(
            "LSTM batch %d group %d FAILED: err %.3g (tol %.1g) det %d\n",
            batch, g, r.err, kTolerance, int(r.deterministic));
        ++h.failures;
      }
      runs.push_back(std::move(r));
    }

    if (!small) {
      // Warm-up, then A/B pairs: round p times the groups starting at
      // p mod groups, each right after a resident launch.
      TimeOnce(resident, stream, 1);
      std::vector<Launch> launch(runs.size());
      for (size_t i = 0; i < runs.size(); ++i) {
        launch[i] = [&, i] {
          return kernels::LaunchLstmClusterRecurrence(runs[i].params, stream);
        };
        if (runs[i].plan.ok()) TimeOnce(launch[i], stream, 1);
      }
      for (int p = 0; p < absl::GetFlag(FLAGS_pairs); ++p) {
        for (size_t j = 0; j < runs.size(); ++j) {
          const size_t i = (p + j) % runs.size();
          if (!runs[i].plan.ok()) continue;
          runs[i].timing.b_us.push_back(TimeOnce(resident, stream, 5));
          runs[i].timing.a_us.push_back(TimeOnce(launch[i], stream, 5));
        }
      }
      for (ClusterGroupRun& r : runs) {
        r.timing.a_median = Median(r.timing.a_us);
        r.timing.b_median = Median(r.timing.b_us);
      }
    }

    // The production choice: the fastest group that passes; without timing
    // (--small) the default group.
    const ClusterGroupRun* best = nullptr;
    for (const ClusterGroupRun& r : runs) {
      if (!r.passes(kTolerance)) continue;
      if (best == nullptr ||
          (small ? r.group == default_group
                 : r.timing.a_median < best->timing.a_median))
        best = &r;
    }
    const ClusterGroupRun& chosen = best != nullptr ? *best : runs.front();

    json groups = json::array();
    for (const ClusterGroupRun& r : runs) {
      json g = {{"group", r.group},
                {"max_abs_err_vs_float64", FiniteOrInf(r.err)},
                {"deterministic", r.deterministic},
                {"same_bits_as_default_group", r.same_bits_as_default},
                {"max_abs_diff_vs_resident", FiniteOrInf(r.diff_vs_resident)}};
      if (r.plan.ok()) {
        g["clusters_per_direction"] = r.plan->clusters_per_direction;
        g["max_active_clusters"] = r.plan->max_active_clusters;
      } else {
        g["error"] = std::string(r.plan.status().message());
      }
      if (!small && r.plan.ok()) g["timing"] = r.timing.ToJson();
      groups.push_back(std::move(g));
    }
    json extra = {
        {"steps", steps},
        {"max_abs_diff_vs_resident", FiniteOrInf(chosen.diff_vs_resident)},
        {"baseline", "lstm_resident"},
        {"group", chosen.group},
        {"default_group", default_group},
        {"group_choice",
         small ? "default (no timing)" : "fastest passing group"},
        {"groups", std::move(groups)}};
    if (chosen.plan.ok()) {
      extra["clusters_per_direction"] = chosen.plan->clusters_per_direction;
      extra["max_active_clusters"] = chosen.plan->max_active_clusters;
    }
    std::optional<bool> speed;
    if (!small && chosen.plan.ok()) {
      extra["timing"] = chosen.timing.ToJson();
      speed = SpeedOk(chosen.timing);
      std::string all;
      double default_us = NAN;
      for (const ClusterGroupRun& r : runs) {
        absl::StrAppend(&all, all.empty() ? "" : ", ", "g", r.group, " ",
                        int(std::lround(r.timing.a_median)));
        if (r.group == default_group) default_us = r.timing.a_median;
      }
      std::printf(
          "LSTM layer recurrence batch %3d (%d steps): best group %d %.1f us, "
          "resident %.1f us, speedup %.2fx; default group %d %.1f us "
          "(%.2fx of best)  [groups us: %s] (%.1f s)\n",
          batch, steps, chosen.group, chosen.timing.a_median,
          chosen.timing.b_median,
          chosen.timing.b_median / chosen.timing.a_median, default_group,
          default_us, default_us / chosen.timing.a_median, all.c_str(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        started)
              .count());
    }
    if (!small && best != nullptr) h.lstm_best_group[batch] = best->group;
    // The chosen group's failure was counted above; Add counts it again.
    if (!chosen.passes(kTolerance)) --h.failures;
    // The recurrence is the same launch for all 4 layers (hidden 128 each;
    // only the input projection GEMM differs): one tuple covers them.
    h.Add("lstm_cluster", "all", batch, "fp32", "lstm", chosen.err, kTolerance,
          chosen.deterministic, extra, speed);
    h.Add("lstm_resident", "all", batch, "fp32", "lstm", err_old, kTolerance,
          det_old, {{"steps", steps}}, std::nullopt);
  }
}

// --- SincNet

void RunSinc(Harness& h, models::DeviceArena* arena, cudaStream_t stream0) {
  const bool small = absl::GetFlag(FLAGS_small);
  const int len = small ? 4003 : 160000, taps = 251, stride = 10;
  const int conv_len = (len - taps) / stride + 1, pooled = conv_len / 3;
  std::unique_ptr<models::cuda::CudaContext> ctx;
  std::unique_ptr<models::cuda::Conv2d> conv;
  // Production's form: SincNet's filters are even (cosine) and odd (sine)
  // about their centre, and the model launches the symmetric kernel.
  auto filters = Random(size_t(kernels::kSincConvChannels) * taps, -0.1f, 0.1f);
  ::diarization::testing::MakeSymmetricHalves(filters,
                                              kernels::kSincConvChannels, taps);
  const bool symmetric = kernels::HasSymmetricHalves(filters, taps);
  cudaStream_t stream = stream0;
  const bool library = absl::GetFlag(FLAGS_library);
  if (library) {
    auto c = models::cuda::CudaContext::Create(
        arena, "qualify", models::cuda::Precision::kFp32, size_t{256} << 20);
    if (!c.ok()) {
      std::printf("CudaContext: %s\n", c.status().ToString().c_str());
      return;
    }
    ctx = std::move(*c);
    stream = ctx->stream();
    auto cv = models::cuda::Conv2d::Create(
        ctx.get(),
        {.out_channels = kernels::kSincConvChannels,
         .in_channels = 1,
         .kernel_h = 1,
         .kernel_w = taps,
         .stride_h = 1,
         .stride_w = stride},
        filters, "qualify");
    if (!cv.ok()) {
      std::printf("Conv2d: %s\n", cv.status().ToString().c_str());
      return;
    }
    conv = std::move(*cv);
  }
  for (const int batch :
       small ? std::vector<int>{2} : std::vector<int>{1, 4, 32}) {
    const auto x = Random(size_t(batch) * len, -1.0f, 1.0f);
    Dev dx(x), dw(filters),
        dy(size_t(batch) * kernels::kSincConvChannels * pooled);
    kernels::SincConvParams p{.x = dx.p,
                              .filters = dw.p,
                              .y = dy.p,
                              .batch = batch,
                              .len = len,
                              .taps = taps,
                              .stride = stride,
                              .symmetric_halves = symmetric};
    Launch direct = [&] { return kernels::LaunchSincConvAbsPool(p, stream); };
    std::vector<float> first;
    bool det = true;
    for (int run = 0; run < 3; ++run) {
      dy.Poison();
      if (absl::Status s = direct(); !s.ok()) {
        std::printf("sinc launch: %s\n", s.ToString().c_str());
        det = false;
        break;
      }
      auto got = dy.Host();
      if (run == 0)
        first = std::move(got);
      else
        det = det && SameBits(first, got);
    }
    // float64 reference on the first and last window.
    double err = first.empty() ? INFINITY : 0;
    for (int b : std::set<int>{0, batch - 1}) {
      if (first.empty()) break;
      const std::vector<double> ref =
          ::diarization::testing::SincConvAbsPoolReference(
              x, filters, b, len, kernels::kSincConvChannels, taps, stride);
      for (size_t i = 0; i < ref.size(); ++i) {
        const float v = first[size_t(b) * ref.size() + i];
        err = std::isfinite(v) ? std::max(err, std::abs(v - ref[i])) : INFINITY;
      }
    }
    json extra = {{"len", len},
                  {"taps", taps},
                  {"stride", stride},
                  {"symmetric_halves", symmetric}};
    std::optional<bool> speed;
    if (library && conv) {
      // The library path production falls back to: cuDNN convolution, then
      // |.| and max-pool 3 (kernels/nn_ops).
      Dev c0(size_t(batch) * kernels::kSincConvChannels * conv_len), ly(dy.n);
      Launch lib = [&]() -> absl::Status {
        if (absl::Status s = conv->Forward(dx.p, batch, 1, len, c0.p); !s.ok())
          return s;
        return kernels::LaunchMaxPool3(
            {.x = c0.p,
             .out = ly.p,
             .rows = int64_t{batch} * kernels::kSincConvChannels,
             .channels = kernels::kSincConvChannels,
             .in_len = conv_len,
             .abs_first = true},
            stream);
      };
      ly.Poison();
      if (absl::Status s = lib(); s.ok()) {
        extra["max_abs_diff_vs_cudnn"] = MaxAbsDiff(first, ly.Host());
        extra["baseline"] = "cudnn_conv+max_pool3";
        if (!small) {
          const AbTiming t = TimeAB(direct, lib, stream, 5);
          extra["timing"] = t.ToJson();
          speed = SpeedOk(t);
          std::printf(
              "SincNet batch %d: direct %.1f us, cuDNN path %.1f us (%.2fx)\n",
              batch, t.a_median, t.b_median, t.b_median / t.a_median);
        }
      } else {
        std::printf("cuDNN SincNet path: %s\n", s.ToString().c_str());
      }
    }
    h.Add("sinc_conv", "sincnet.conv1d.0", batch, "fp32", "sinc", err, 5e-6,
          det, extra, speed);
  }
}

// --- the trunk's layer1 convolutions (kernels/conv3x3_c32.h)

// Per output, |y − ref| / (|bias| + Σ|w·x| + |residual|) over items 0 and
// n − 1 (the float64 reference of a whole batch of 32 would take minutes):
// TF32 rounds each operand by at most 2^−11 relative, so a correct kernel
// stays under ~1e-3 of that magnitude whatever the inputs.
double Conv32Error(const std::vector<float>& got, const std::vector<float>& x,
                   const std::vector<float>& oihw,
                   const std::vector<float>& bias,
                   const std::vector<float>* residual, int n, int h, int w) {
  if (got.empty()) return INFINITY;
  constexpr int kC = kernels::kConv3x3C32Channels;
  const size_t per = size_t(h) * w * kC;
  double worst = 0;
  for (const int item : std::set<int>{0, n - 1}) {
    const std::vector<float> xi(x.begin() + item * per,
                                x.begin() + (item + 1) * per);
    std::vector<float> ri;
    if (residual != nullptr) {
      ri.assign(residual->begin() + item * per,
                residual->begin() + (item + 1) * per);
    }
    std::vector<double> scale;
    const std::vector<double> ref = ::diarization::testing::Conv3x3Nhwc(
        xi, oihw, bias, residual ? &ri : nullptr, /*relu=*/true, 1, h, w, kC,
        &scale);
    for (size_t i = 0; i < per; ++i) {
      const float v = got[item * per + i];
      if (!std::isfinite(v)) return INFINITY;
      worst = std::max(worst, std::abs(v - ref[i]) / (scale[i] + 1e-30));
    }
  }
  return worst;
}

// The six layer1 convolutions have two forms: conv1 (bias + ReLU) and conv2
// (bias + residual + ReLU). Baseline: what production runs without the
// kernel, the same layer through a cuDNN graph (engines timed for the
// shape, behind the layer fence), on the same stream.
void RunConv32(Harness& h, models::DeviceArena* arena, cudaStream_t stream0) {
  const bool small = absl::GetFlag(FLAGS_small);
  const bool library = absl::GetFlag(FLAGS_library);
  constexpr int kC = kernels::kConv3x3C32Channels;
  const int hh = small ? 6 : 80, ww = small ? 70 : 998;
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> oihw(kC * kC * 9), bias(kC);
  for (float& v : oihw) v = 0.08f * gauss(Rng());
  for (float& v : bias) v = 0.3f * gauss(Rng());
  auto packed = kernels::PackConv3x3C32Weights(oihw);
  if (!packed.ok()) {
    std::printf("PackConv3x3C32Weights: %s\n",
                packed.status().ToString().c_str());
    ++h.failures;
    return;
  }
  cudaStream_t stream = stream0;
  std::unique_ptr<models::cuda::CudaContext> ctx;
  std::unique_ptr<models::cuda::Conv2d> conv;
  std::unique_ptr<models::cuda::GraphConv2d> graph;
  if (library) {
    auto c = models::cuda::CudaContext::Create(
        arena, "qualify", models::cuda::Precision::kTf32, size_t{256} << 20);
    if (c.ok()) {
      ctx = std::move(*c);
      stream = ctx->stream();
      auto cv = models::cuda::Conv2d::Create(ctx.get(),
                                             {.out_channels = kC,
                                              .in_channels = kC,
                                              .kernel_h = 3,
                                              .kernel_w = 3,
                                              .pad_h = 1,
                                              .pad_w = 1,
                                              .channels_last = true},
                                             oihw, "qualify");
      if (cv.ok()) {
        conv = std::move(*cv);
        auto g = models::cuda::GraphConv2d::Create(
            ctx.get(), conv.get(), "layer1",
            models::cuda::GraphConv2d::Options{});
        if (g.ok()) {
          graph = std::move(*g);
        } else {
          std::printf("GraphConv2d: %s\n", g.status().ToString().c_str());
        }
      } else {
        std::printf("Conv2d: %s\n", cv.status().ToString().c_str());
      }
    } else {
      std::printf("CudaContext: %s\n", c.status().ToString().c_str());
    }
  }
  Dev dw(*packed), db(bias);
  for (const int batch :
       small ? std::vector<int>{2} : std::vector<int>{4, 32, 64}) {
    const size_t total = size_t(batch) * hh * ww * kC;
    std::vector<float> x(total), r(total);
    for (float& v : x) v = std::max(0.0f, gauss(Rng()));
    for (float& v : r) v = std::max(0.0f, gauss(Rng()));
    Dev dx(x), dr(r), dy(total);
    for (const bool conv2 : {false, true}) {
      Launch kernel = [&]() {
        return kernels::LaunchConv3x3C32Tf32(
            {.x = dx.p,
             .packed_weights = dw.p,
             .bias = db.p,
             .residual = conv2 ? dr.p : nullptr,
             .y = dy.p,
             .n = batch,
             .h = hh,
             .w = ww},
            stream);
      };
      auto [got, det] = ThreeRuns(dy, kernel);
      const double err =
          Conv32Error(got, x, oihw, bias, conv2 ? &r : nullptr, batch, hh, ww);
      json extra = {{"h", hh},
                    {"w", ww},
                    {"tile", kernels::Conv3x3C32TileName(
                                 kernels::kConv3x3C32DefaultTile)},
                    {"error", "max |y - ref| / (|bias| + sum |w x| + |z|)"}};
      std::optional<bool> speed;
      if (graph) {
        Dev ly(total);
        Launch lib = [&]() {
          return graph->ForwardBiasRelu(dx.p, batch, hh, ww, db.p,
                                        conv2 ? dr.p : nullptr, ly.p);
        };
        ly.Poison();
        if (absl::Status st = lib(); st.ok()) {
          extra["baseline"] = "cudnn_graph";
          extra["max_abs_diff_vs_cudnn"] = MaxAbsDiff(got, ly.Host());
          if (!small) {
            const AbTiming t = TimeAB(kernel, lib, stream, 5);
            extra["timing"] = t.ToJson();
            speed = SpeedOk(t);
            std::printf(
                "layer1 %s batch %d: kernel %.1f us, cuDNN graph %.1f us "
                "(%.2fx)\n",
                conv2 ? "conv2" : "conv1", batch, t.a_median, t.b_median,
                t.b_median / t.a_median);
          }
        } else {
          std::printf("cuDNN graph layer1: %s\n", st.ToString().c_str());
        }
      }
      h.Add("conv3x3_c32", conv2 ? "layer1.conv2" : "layer1.conv1", batch,
            "tf32", "conv32", err, 1e-3, det, extra, speed);
    }
  }
}

// --- epilogues: stats pooling and nn_ops

double Err(const std::vector<float>& got, const std::vector<double>& ref) {
  return got.empty() ? INFINITY : MaxAbsDiff(got, ref);
}

void RunStatsPool(Harness& h, cudaStream_t stream) {
  const bool small = absl::GetFlag(FLAGS_small);
  // The embedding model's shape: ResNet34 output (256 channels x 10 rows =
  // 2560 features, 125 frames), 3 masks of 589 frames per window.
  const int masks = 3, frames = 589, time = 125;
  const int feat = small ? 40 : 2560, rows = small ? 4 : 10;
  for (const int batch :
       small ? std::vector<int>{2} : std::vector<int>{1, 32}) {
    auto x = Random(size_t(batch) * feat * time, -2.0f, 3.0f);
    std::vector<float> m(size_t(batch) * masks * frames);
    std::bernoulli_distribution coin(0.4);
    for (float& v : m) v = coin(Rng()) ? 1.0f : 0.0f;
    for (int f = 0; f < frames; ++f) m[f] = 0;  // an all-zero mask
    const std::vector<double> ref = ::diarization::testing::StatsPoolReference(
        x, m, batch, masks, feat, time, frames);
    // NCHW (FP32 embeddings) and channels-last (TF32 NHWC).
    const std::vector<float> xcl =
        ::diarization::testing::ToChannelsLast(x, batch, feat, time, rows);
    Dev dx(x), dxcl(xcl), dm(m), ds(ref.size());
    for (const bool cl : {false, true}) {
      auto [got, det] = ThreeRuns(ds, [&] {
        return kernels::LaunchStatsPool({.features = cl ? dxcl.p : dx.p,
                                         .masks = dm.p,
                                         .stats = ds.p,
                                         .batch = batch,
                                         .masks_per_item = masks,
                                         .feat = feat,
                                         .time = time,
                                         .mask_frames = frames,
                                         .channels_last_rows = cl ? rows : 0},
                                        stream);
      });
      h.Add("stats_pool", cl ? "nhwc" : "nchw", batch, cl ? "tf32" : "fp32",
            "epilogues", Err(got, ref), 5e-5, det,
            {{"feat", feat}, {"masks", masks}}, std::nullopt);
    }
  }
}

void RunNnOps(Harness& h, cudaStream_t stream) {
  const bool small = absl::GetFlag(FLAGS_small);
  for (const int batch :
       small ? std::vector<int>{2} : std::vector<int>{1, 32}) {
    // InstanceNorm + LeakyReLU on the segmentation's shapes: (80, 5325),
    // (60, 1773), (60, 589) with the (batch, time, channel) output.
    struct In {
      int channels, len;
      bool transpose;
    };
    const std::vector<In> norms =
        small ? std::vector<In>{{5, 301, true}}
              : std::vector<In>{
                    {80, 5325, false}, {60, 1773, false}, {60, 589, true}};
    for (const In& in : norms) {
      auto x = Random(size_t(batch) * in.channels * in.len, -3.0f, 5.0f);
      auto g = Random(in.channels, 0.5f, 1.5f),
           be = Random(in.channels, -0.5f, 0.5f);
      Dev dx(x), dg(g), db(be), dy(x.size());
      auto [got, det] = ThreeRuns(dy, [&] {
        return kernels::LaunchInstanceNorm({.x = dx.p,
                                            .gamma = dg.p,
                                            .beta = db.p,
                                            .out = dy.p,
                                            .batch = batch,
                                            .channels = in.channels,
                                            .len = in.len,
                                            .leaky = true,
                                            .slope = 0.01f,
                                            .transpose_out = in.transpose},
                                           stream);
      });
      std::vector<double> ref(x.size());
      for (int b = 0; b < batch; ++b)
        for (int c = 0; c < in.channels; ++c) {
          const float* r = &x[(size_t(b) * in.channels + c) * in.len];
          double mean = 0, var = 0;
          for (int t = 0; t < in.len; ++t) mean += r[t];
          mean /= in.len;
          for (int t = 0; t < in.len; ++t) var += (r[t] - mean) * (r[t] - mean);
          var /= in.len;
          for (int t = 0; t < in.len; ++t) {
            double v = (r[t] - mean) / std::sqrt(var + 1e-5) * g[c] + be[c];
            if (v < 0) v *= 0.01;
            const size_t o = in.transpose
                                 ? (size_t(b) * in.len + t) * in.channels + c
                                 : (size_t(b) * in.channels + c) * in.len + t;
            ref[o] = v;
          }
        }
      h.Add("nn_ops", absl::StrCat("instance_norm_", in.channels, "x", in.len),
            batch, "fp32", "epilogues", Err(got, ref), 5e-5, det,
            json::object(), std::nullopt);
    }
    // Max-pool 3 with |x| (SincNet fallback) and with a conv bias.
    {
      const int channels = 60, len = small ? 301 : 5321;
      auto x = Random(size_t(batch) * channels * len, -3.0f, 3.0f);
      auto bias = Random(channels, -1.0f, 1.0f);
      Dev dx(x), dbias(bias), dp(size_t(batch) * channels * (len / 3));
      for (const bool with_abs : {true, false}) {
        auto [got, det] = ThreeRuns(dp, [&] {
          return kernels::LaunchMaxPool3({.x = dx.p,
                                          .bias = with_abs ? nullptr : dbias.p,
                                          .out = dp.p,
                                          .rows = int64_t{batch} * channels,
                                          .channels = channels,
                                          .in_len = len,
                                          .abs_first = with_abs},
                                         stream);
        });
        std::vector<double> ref(dp.n);
        for (int r = 0; r < batch * channels; ++r)
          for (int t = 0; t < len / 3; ++t) {
            double m = -INFINITY;
            for (int k = 0; k < 3; ++k) {
              double v = x[size_t(r) * len + 3 * t + k];
              m = std::max(m, with_abs ? std::abs(v) : v + bias[r % channels]);
            }
            ref[size_t(r) * (len / 3) + t] = m;
          }
        h.Add("nn_ops", with_abs ? "max_pool3_abs" : "max_pool3_bias", batch,
              "fp32", "epilogues", Err(got, ref), 1e-6, det, json::object(),
              std::nullopt);
      }
    }
    // Log-softmax over the 7 powerset classes of 589 frames per window.
    {
      const int rows = batch * 589, cols = 7;
      auto l = Random(size_t(rows) * cols, -20.0f, 20.0f);
      Dev dl(l), dls(l.size());
      auto [got, det] = ThreeRuns(dls, [&] {
        return kernels::LaunchLogSoftmax(dl.p, dls.p, rows, cols, stream);
      });
      std::vector<double> ref(l.size());
      for (int r = 0; r < rows; ++r) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < cols; ++c) m = std::max(m, double(l[r * cols + c]));
        for (int c = 0; c < cols; ++c) s += std::exp(l[r * cols + c] - m);
        for (int c = 0; c < cols; ++c)
          ref[r * cols + c] = l[r * cols + c] - m - std::log(s);
      }
      h.Add("nn_ops", "log_softmax", batch, "fp32", "epilogues", Err(got, ref),
            5e-5, det, json::object(), std::nullopt);
    }
    // BatchNorm epilogue (+ residual, ReLU), NCHW and channels-last, on a
    // ResNet34 stage-2 shape (128 channels, 40 x 250 -> here 40 x 63).
    {
      const int channels = small ? 5 : 128, spatial = small ? 301 : 40 * 63;
      auto x = Random(size_t(batch) * channels * spatial, -3.0f, 3.0f);
      auto sc = Random(channels, 0.5f, 1.5f),
           sh = Random(channels, -0.5f, 0.5f);
      auto res = Random(x.size(), -1.0f, 1.0f);
      Dev dx(x), dsc(sc), dsh(sh), dres(res), dy(x.size());
      for (const bool cl : {false, true}) {
        auto [got, det] = ThreeRuns(dy, [&] {
          return kernels::LaunchScaleShiftAct({.x = dx.p,
                                               .scale = dsc.p,
                                               .shift = dsh.p,
                                               .residual = dres.p,
                                               .out = dy.p,
                                               .n = batch,
                                               .channels = channels,
                                               .spatial = spatial,
                                               .relu = true,
                                               .channels_last = cl},
                                              stream);
        });
        std::vector<double> ref(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          const int c = cl ? int(i % channels) : int((i / spatial) % channels);
          ref[i] = std::max(0.0, double(x[i]) * sc[c] + sh[c] + res[i]);
        }
        h.Add("nn_ops", cl ? "scale_shift_act_nhwc" : "scale_shift_act_nchw",
              batch, cl ? "tf32" : "fp32", "epilogues", Err(got, ref), 1e-5,
              det, json::object(), std::nullopt);
      }
    }
    // Row broadcast (GEMM bias prefill) and LeakyReLU.
    {
      const int rows = batch * 589, cols = 1024;
      auto row = Random(cols, -1.0f, 1.0f);
      Dev drow(row), dout(size_t(rows) * cols);
      auto [got, det] = ThreeRuns(dout, [&] {
        return kernels::LaunchBroadcastRows(drow.p, dout.p, rows, cols, stream);
      });
      std::vector<double> ref(dout.n);
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = row[i % cols];
      h.Add("nn_ops", "broadcast_rows", batch, "fp32", "epilogues",
            Err(got, ref), 0.0, det, json::object(), std::nullopt);
      auto x = Random(size_t(rows) * 128, -2.0f, 2.0f);
      Dev dv(x.size());
      auto [got2, det2] = ThreeRuns(dv, [&]() -> absl::Status {
        if (!Check(cudaMemcpyAsync(dv.p, x.data(), x.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, stream),
                   "upload"))
          return absl::InternalError("upload");
        return kernels::LaunchLeakyRelu(dv.p, int64_t(x.size()), 0.01f, stream);
      });
      std::vector<double> ref2(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        ref2[i] = x[i] < 0 ? x[i] * 0.01f : x[i];
      h.Add("nn_ops", "leaky_relu", batch, "fp32", "epilogues", Err(got2, ref2),
            1e-7, det2, json::object(), std::nullopt);
    }
  }
}

// --- window gather (batches of windows from a recording's span)

void RunWindowGather(Harness& h, cudaStream_t stream) {
  const bool small = absl::GetFlag(FLAGS_small);
  const int64_t window = small ? 1000 : models::kWindowSamples;
  const int64_t step = window / 10;
  for (const int batch :
       small ? std::vector<int>{3} : std::vector<int>{1, 32}) {
    // One recording covering the batch, the last window running past its end
    // by a third (zero padding).
    const int64_t samples = (batch - 1) * step + window - window / 3;
    const auto audio = Random(size_t(samples), -1.0f, 1.0f);
    std::vector<int64_t> starts(batch), ends(batch);
    for (int i = 0; i < batch; ++i) {
      starts[i] = i * step;
      ends[i] = std::min(samples, starts[i] + window);
    }
    Dev da(audio), dw(size_t(batch) * window);
    int64_t* d_idx = nullptr;
    Check(cudaMalloc(reinterpret_cast<void**>(&d_idx),
                     2 * batch * sizeof(int64_t)),
          "cudaMalloc");
    Check(cudaMemcpy(d_idx, starts.data(), batch * sizeof(int64_t),
                     cudaMemcpyHostToDevice),
          "upload");
    Check(cudaMemcpy(d_idx + batch, ends.data(), batch * sizeof(int64_t),
                     cudaMemcpyHostToDevice),
          "upload");
    auto [got, det] = ThreeRuns(dw, [&] {
      return kernels::LaunchGatherWindows({.audio = da.p,
                                           .audio_samples = samples,
                                           .starts = d_idx,
                                           .ends = d_idx + batch,
                                           .windows = dw.p,
                                           .batch = batch,
                                           .window_samples = window},
                                          stream);
    });
    cudaFree(d_idx);
    std::vector<double> ref(dw.n, 0.0);
    for (int i = 0; i < batch; ++i)
      for (int64_t j = 0; starts[i] + j < ends[i]; ++j)
        ref[size_t(i) * window + j] = audio[starts[i] + j];
    h.Add("window_gather", "segmentation.windows", batch, "fp32", "epilogues",
          Err(got, ref), 0.0, det, {{"window_samples", window}}, std::nullopt);
  }
}

// --- fbank (through the embedding model's fbank stage)

void RunFbank(Harness& h, std::shared_ptr<models::DeviceArena> arena,
              const std::string& tmp) {
  const bool small = absl::GetFlag(FLAGS_small);
  const std::string path = tmp + "/qualify_embedding.safetensors";
  if (absl::Status s =
          models::WriteSafetensors(path, models::RandomResNet34Tensors(7), {});
      !s.ok()) {
    std::printf("fbank: %s\n", s.ToString().c_str());
    return;
  }
  auto w = models::SafetensorsFile::Open(path);
  if (!w.ok()) return;
  const int max_batch = small ? 1 : 32;
  models::CudaModelOptions o;
  o.max_batch = max_batch;
  auto model = models::CudaEmbeddingModel::Create(**w, arena, o);
  if (!model.ok()) {
    std::printf("embedding model: %s\n", model.status().ToString().c_str());
    return;
  }
  auto cpu = models::Fbank::Create();
  if (!cpu.ok()) return;
  const int frames = 998;
  for (const int batch :
       small ? std::vector<int>{1} : std::vector<int>{1, 4, 32}) {
    const auto win =
        Random(size_t(batch) * models::kWindowSamples, -0.5f, 0.5f);
    std::vector<float> first;
    bool det = true;
    for (int run = 0; run < 3; ++run) {
      // ComputeFbank writes the host span; poison it so a short write fails.
      std::vector<float> got(size_t(batch) * frames * 80, NAN);
      if (absl::Status s = (*model)->ComputeFbank(win, batch, got); !s.ok()) {
        std::printf("fbank: %s\n", s.ToString().c_str());
        det = false;
        break;
      }
      if (run == 0)
        first = std::move(got);
      else
        det = det && SameBits(first, got);
    }
    std::vector<double> ref(size_t(batch) * frames * 80);
    std::vector<float> one(size_t(frames) * 80);
    for (int b = 0; b < batch; ++b) {
      if (!(*cpu)
               ->Compute(
                   std::span(win).subspan(size_t(b) * models::kWindowSamples,
                                          models::kWindowSamples),
                   one)
               .ok())
        return;
      std::copy(one.begin(), one.end(), ref.begin() + size_t(b) * frames * 80);
    }
    // The reference is the CPU backend's fbank (float64 DFT, the CPU's own
    // float32 steps around it), which equals Kaldi's to ~1e-5.
    h.Add("fbank", "embedding.fbank", batch, "fp32", "fbank", Err(first, ref),
          1e-4, det, {{"reference", "engine/models/fbank (CPU)"}},
          std::nullopt);
  }
}

// --- the whole segmentation network: cluster vs resident LSTM

// The bound on the two outputs' largest log-probability difference depends
// on the weights. With the real ones the CUDA network is within 8e-5 of the
// CPU one (cuda_models_test), and the two LSTM kernels, which differ only in
// their summation order, must stay within 1e-4 of each other. Random
// weights amplify float32 rounding instead: there the CUDA and CPU networks
// differ by ~4e-2, and these two kernels landed 2.4e-5 to 1.22e-4 apart in
// the last three qualification rounds, around the 1e-4 bound, so the check
// failed on noise (and bench/gpu/parts/qualify.sh exited 1) in every one of
// them. On random weights it is held to 1e-3: a kernel fault (a wrong gate, a
// lost step) moves log-probabilities by O(1).
constexpr double kSegmentationBoundGiven = 1e-4;
constexpr double kSegmentationBoundRandom = 1e-3;

void RunSegmentation(Harness& h, std::shared_ptr<models::DeviceArena> arena,
                     const std::string& tmp) {
  const bool small = absl::GetFlag(FLAGS_small);
  std::string path = absl::GetFlag(FLAGS_segmentation_weights);
  const bool random_weights = path.empty();
  if (random_weights) {
    path = tmp + "/qualify_segmentation.safetensors";
    if (const absl::Status st =
            models::WriteSafetensors(path, models::RandomPyanNetTensors(3), {});
        !st.ok()) {
      std::printf("segmentation: %s\n", st.ToString().c_str());
      ++h.failures;
      return;
    }
  }
  auto w = models::SafetensorsFile::Open(path);
  if (!w.ok()) {
    std::printf("segmentation weights %s: %s\n", path.c_str(),
                w.status().ToString().c_str());
    ++h.failures;
    return;
  }
  const double bound =
      random_weights ? kSegmentationBoundRandom : kSegmentationBoundGiven;
  std::printf("segmentation: %s weights, bound %.0e on the log-probabilities\n",
              random_weights ? "random" : "the given", bound);
  const std::vector<int> batches =
      small ? std::vector<int>{2}
            : IntList(absl::GetFlag(FLAGS_segmentation_batches));
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  std::unique_ptr<models::CudaSegmentationModel> m[2];
  for (int i = 0; i < 2; ++i) {
    models::CudaModelOptions o;
    o.max_batch = max_batch;
    o.workspace_bytes = size_t{64} << 20;
    o.lstm_kernel = i == 0 ? "cluster" : "resident";
    // The groups just measured, through the harness-only entry point.
    models::CudaHarnessOptions harness;
    if (i == 0) {
      harness.lstm_cluster_groups.assign(max_batch + 1, 0);
      for (const auto& [batch, group] : h.lstm_best_group)
        if (batch <= max_batch) harness.lstm_cluster_groups[batch] = group;
    }
    auto model = models::CudaSegmentationModel::Create(**w, arena, o, harness);
    if (!model.ok()) {
      std::printf("segmentation (%s): %s\n", o.lstm_kernel.c_str(),
                  model.status().ToString().c_str());
      ++h.failures;
      return;
    }
    m[i] = std::move(*model);
  }
  std::printf("segmentation with the cluster LSTM: %s\n",
              m[0]->lstm_selection().c_str());
  const size_t per =
      size_t(models::kFramesPerWindow) * models::kPowersetClasses;
  for (const int batch : batches) {
    const auto win =
        Random(size_t(batch) * models::kWindowSamples, -0.5f, 0.5f);
    std::vector<float> out[2];
    absl::Status st;
    for (int i = 0; i < 2 && st.ok(); ++i) {
      out[i].assign(batch * per, NAN);
      st = m[i]->Run(win, batch, out[i]);
    }
    if (!st.ok()) {
      std::printf("segmentation batch %d: %s\n", batch, st.ToString().c_str());
      ++h.failures;
      continue;
    }
    const double diff = MaxAbsDiff(out[0], out[1]);
    const auto best = h.lstm_best_group.find(batch);
    json e = {
        {"what", "segmentation forward, cluster vs resident LSTM"},
        {"batch", batch},
        {"cluster_group", best != h.lstm_best_group.end() ? best->second : 0},
        {"max_abs_diff_log_probs",
         std::isfinite(diff) ? json(diff) : json("inf")},
        {"weights", random_weights ? "random" : "given"},
        {"bound", bound}};
    if (!(diff < bound)) ++h.failures;
    if (!small) {
      // Host wall time of Run (graph replay, upload, download), A B A B.
      std::vector<double> t[2];
      for (int rep = 0; rep < 2 * absl::GetFlag(FLAGS_pairs) + 2; ++rep) {
        const int i = rep % 2;
        const auto start = std::chrono::steady_clock::now();
        for (int k = 0; k < 3; ++k) st.Update(m[i]->Run(win, batch, out[i]));
        const double us = std::chrono::duration<double, std::micro>(
                              std::chrono::steady_clock::now() - start)
                              .count() /
                          3;
        if (rep >= 2) t[i].push_back(us);  // the first pair warms up
      }
      e["cluster_us"] = t[0];
      e["resident_us"] = t[1];
      e["speedup"] = Median(t[1]) / Median(t[0]);
      std::printf(
          "segmentation forward batch %3d: cluster LSTM %.0f us, resident %.0f "
          "us (%.2fx), max |diff| log-probs %.3g\n",
          batch, Median(t[0]), Median(t[1]), Median(t[1]) / Median(t[0]), diff);
    } else {
      std::printf("segmentation forward batch %d: max |diff| %.3g\n", batch,
                  diff);
    }
    h.end_to_end.push_back(e);
  }
}

int Main() {
  Harness h;
  if (const std::string f = absl::GetFlag(FLAGS_sanitizer_results);
      !f.empty()) {
    std::ifstream in(f);
    std::string group, tool, result;
    while (in >> group >> tool >> result) h.sanitizer[group][tool] = result;
  }
  cudaDeviceProp prop{};
  if (!Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"))
    return 2;
  int driver = 0, runtime_version = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime_version);
  std::printf(
      "device %s sm_%d%d, %d SMs, CUDA driver %d runtime %d cuDNN %zu\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, driver,
      runtime_version, cudnnGetVersion());
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const std::string tmp =
      std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::set<std::string> groups;
  for (absl::string_view g :
       absl::StrSplit(absl::GetFlag(FLAGS_groups), ',', absl::SkipEmpty()))
    groups.insert(std::string(g));
  // The device arena only where a model or cuDNN needs it (the kernels
  // alone run without it, e.g. under the sanitizers).
  const bool library = absl::GetFlag(FLAGS_library);
  std::shared_ptr<models::DeviceArena> arena;
  if (((groups.count("sinc") || groups.count("conv32")) && library) ||
      groups.count("fbank") || groups.count("segmentation")) {
    models::DeviceArenaOptions ao;
    ao.budget_bytes = size_t{24} << 30;
    auto arena_or = models::CreateCudaDeviceArena(ao);
    if (!arena_or.ok()) {
      std::printf("arena: %s\n", arena_or.status().ToString().c_str());
      return 2;
    }
    arena = std::move(*arena_or);
  }
  // The record, rewritten after each group so that a run stopped by its
  // time limit still leaves what it measured ("complete": false).
  auto write_record = [&](bool complete) {
    json sources = json::object();
    for (const auto& [name, hash] : kernels::KernelSourceHashes())
      sources[name] = hash;
    json san = json::object();
    for (const auto& [g, tools] : h.sanitizer) san[g] = tools;
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    json record = {
        {"complete", complete},
        {"schema", 2},  // 2: lstm_cluster tuples record group choice
        {"created_utc", when},
        {"git_commit", absl::GetFlag(FLAGS_git_commit)},
        {"device",
         {{"name", prop.name},
          {"compute_capability", absl::StrCat(prop.major, ".", prop.minor)},
          {"multiprocessors", prop.multiProcessorCount}}},
        {"driver", absl::GetFlag(FLAGS_driver)},
        {"cuda_driver_api", driver},
        {"cuda_runtime", runtime_version},
        {"cudnn", cudnnGetVersion()},
        {"rule",
         absl::StrCat(
             "qualified = parity within tolerance vs float64 && bitwise "
             "deterministic over 3 runs (output NaN-poisoned before each) "
             "&& compute-sanitizer memcheck/racecheck/initcheck/synccheck "
             "clean && (no alternative || median time <= (1 + ",
             absl::GetFlag(FLAGS_slowdown_tolerance),
             ") x baseline median, A/B/A/B)")},
        {"sources", sources},
        {"sanitizer", san},
        {"tuples", h.tuples},
        {"end_to_end", h.end_to_end},
    };
    if (const std::string out = absl::GetFlag(FLAGS_out); !out.empty()) {
      std::ofstream f(out);
      f << record.dump(1) << "\n";
      if (complete)
        std::printf("wrote %s (%zu tuples)\n", out.c_str(), h.tuples.size());
    }
  };
  if (groups.count("lstm")) RunLstm(h, stream);
  write_record(false);
  if (groups.count("sinc")) RunSinc(h, arena.get(), stream);
  if (groups.count("epilogues")) {
    RunStatsPool(h, stream);
    RunNnOps(h, stream);
    RunWindowGather(h, stream);
  }
  write_record(false);
  if (groups.count("fbank")) RunFbank(h, arena, tmp);
  write_record(false);
  if (groups.count("conv32")) RunConv32(h, arena.get(), stream);
  write_record(false);
  if (groups.count("segmentation")) RunSegmentation(h, arena, tmp);
  const bool ok = Check(cudaDeviceSynchronize(), "final sync");
  write_record(true);

  int qualified = 0;
  for (const auto& t : h.tuples) qualified += t["qualified"].get<bool>();
  std::printf(
      "QUALIFY SUMMARY: %zu tuples, %d qualified, %d parity/determinism "
      "failures\n",
      h.tuples.size(), qualified, h.failures);
  return ok && h.failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace diarization

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return diarization::Main();
}
