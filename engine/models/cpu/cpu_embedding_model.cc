#include "engine/models/cpu/cpu_embedding_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cpu/dnnl_util.h"
#include "engine/models/cpu/stage_timer.h"
#include "engine/models/format/weights.h"

namespace diarization::models {
namespace {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;
constexpr float kBnEps = ResNet34HyperParameters::kBatchNormEps;
constexpr std::array<int, 4> kBlocks = ResNet34HyperParameters::kBlocks;
constexpr std::array<int, 4> kChannels = ResNet34HyperParameters::kChannels;

// A convolution with BatchNorm folded in: weights (O, I, k, k), bias (O).
struct FoldedConv {
  int out = 0, in = 0, kernel = 0, stride = 1;
  std::vector<float> weight, bias;
};

// W' = W·γ/√(var+ε), b' = β − mean·γ/√(var+ε) (models.md §4).
absl::StatusOr<FoldedConv> ReadFoldedConv(const SafetensorsFile& f,
                                          const std::string& conv,
                                          const std::string& bn, int out,
                                          int in, int kernel, int stride) {
  FoldedConv c{out, in, kernel, stride, {}, {}};
  ASSIGN_OR_RETURN(c.weight, ReadF32(f, conv, {out, in, kernel, kernel}));
  ASSIGN_OR_RETURN(auto gamma, ReadF32(f, bn + ".weight", {out}));
  ASSIGN_OR_RETURN(auto beta, ReadF32(f, bn + ".bias", {out}));
  ASSIGN_OR_RETURN(auto mean, ReadF32(f, bn + ".running_mean", {out}));
  ASSIGN_OR_RETURN(auto var, ReadF32(f, bn + ".running_var", {out}));
  c.bias.resize(out);
  const int per_out = in * kernel * kernel;
  for (int o = 0; o < out; ++o) {
    const double scale =
        gamma[o] / std::sqrt(static_cast<double>(var[o]) + kBnEps);
    for (int i = 0; i < per_out; ++i) {
      c.weight[o * per_out + i] =
          static_cast<float>(c.weight[o * per_out + i] * scale);
    }
    c.bias[o] = static_cast<float>(beta[o] - mean[o] * scale);
  }
  return c;
}

}  // namespace

int NearestMaskFrame(int j) {
  // PyTorch's nearest: src = min(floor(dst · scale), in − 1) with
  // scale = (float)in / out, all in float32.
  const float scale =
      static_cast<float>(kFramesPerWindow) / static_cast<float>(kTrunkFrames);
  const int src = static_cast<int>(std::floor(static_cast<float>(j) * scale));
  return std::min(src, kFramesPerWindow - 1);
}

struct CpuEmbeddingModel::Weights {
  FoldedConv stem;
  struct Block {
    FoldedConv conv1, conv2;
    bool projection = false;
    FoldedConv shortcut;
  };
  std::vector<Block> blocks;
  std::vector<float> seg_w, seg_b;  // (256, 5120), (256)
};

struct CpuEmbeddingModel::TrunkPlan {
  int batch = 0;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<float> input;  // (B, 1, 80, 998)
  std::vector<float> trunk;  // (B, 256, 10, 125) plain
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
  };
  std::vector<Step> steps;
};

// seg_1 for one window's masks, run window by window over a batch's
// statistics. oneDNN's sgemm picks its blocking of the 5120-long reduction
// from the row count: on AVX2 machines one window's embeddings came out
// other in the last bits in a run of 12 rows than of 3. At one window's row
// count they are the same whatever the batch (cpu_embedding_model_test).
struct CpuEmbeddingModel::HeadPlan {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;  // SRC and DST set per window
};

CpuEmbeddingModel::CpuEmbeddingModel() = default;
CpuEmbeddingModel::~CpuEmbeddingModel() = default;

absl::StatusOr<std::unique_ptr<CpuEmbeddingModel>> CpuEmbeddingModel::Create(
    const SafetensorsFile& f, const CpuModelOptions& options) {
  std::unique_ptr<CpuEmbeddingModel> model(new CpuEmbeddingModel());
  model->options_ = options;
  // Primitive descriptors size their work split by the thread count at
  // creation, so the plans built here must see the configured count too.
  ApplyCpuThreads(options.threads);
  ASSIGN_OR_RETURN(model->fbank_, Fbank::Create());
  auto w = std::make_unique<Weights>();
  ASSIGN_OR_RETURN(w->stem,
                   ReadFoldedConv(f, "resnet.conv1.weight", "resnet.bn1",
                                  kChannels[0], 1, 3, 1));
  int in_planes = kChannels[0];
  for (int layer = 0; layer < 4; ++layer) {
    const int planes = kChannels[layer];
    for (int b = 0; b < kBlocks[layer]; ++b) {
      const std::string p = absl::StrCat("resnet.layer", layer + 1, ".", b);
      const int stride = (b == 0 && layer > 0) ? 2 : 1;
      Weights::Block block;
      ASSIGN_OR_RETURN(block.conv1,
                       ReadFoldedConv(f, p + ".conv1.weight", p + ".bn1",
                                      planes, in_planes, 3, stride));
      ASSIGN_OR_RETURN(block.conv2,
                       ReadFoldedConv(f, p + ".conv2.weight", p + ".bn2",
                                      planes, planes, 3, 1));
      block.projection = stride != 1 || in_planes != planes;
      if (block.projection) {
        ASSIGN_OR_RETURN(
            block.shortcut,
            ReadFoldedConv(f, p + ".shortcut.0.weight", p + ".shortcut.1",
                           planes, in_planes, 1, stride));
      }
      w->blocks.push_back(std::move(block));
      in_planes = planes;
    }
  }
  ASSIGN_OR_RETURN(
      w->seg_w, ReadF32(f, "resnet.seg_1.weight", {kEmbeddingDim, kStatsDim}));
  ASSIGN_OR_RETURN(w->seg_b, ReadF32(f, "resnet.seg_1.bias", {kEmbeddingDim}));
  model->weights_ = std::move(w);
  RETURN_IF_ERROR(model->GetTrunkPlan(1).status());
  RETURN_IF_ERROR(model->GetHeadPlan(1).status());
  return model;
}

absl::StatusOr<CpuEmbeddingModel::TrunkPlan*> CpuEmbeddingModel::GetTrunkPlan(
    int batch) {
  auto it = trunk_plans_.find(batch);
  if (it != trunk_plans_.end()) return it->second.get();
  auto plan = std::make_unique<TrunkPlan>();
  TrunkPlan& p = *plan;
  const int64_t b = batch;
  p.batch = batch;
  try {
    p.input.resize(b * kFbankMelBins * kFbankFrames);
    p.trunk.resize(b * kTrunkFeatures * kTrunkFrames);

    // Adds conv(src) → dst. dst_md: a fixed layout or `any`. Returns the
    // primitive's dst desc. `sum` accumulates into dst (residual); `relu`
    // applies ReLU last.
    auto add_conv = [&](const FoldedConv& c, const memory& src,
                        const memory::desc& dst_md, bool sum, bool relu,
                        memory* dst) {
      const memory::desc src_md = src.get_desc();
      const memory::dims sd = src_md.dims();
      const int64_t pad = c.kernel / 2;
      const int64_t oh = (sd[2] + 2 * pad - c.kernel) / c.stride + 1;
      const int64_t ow = (sd[3] + 2 * pad - c.kernel) / c.stride + 1;
      memory::desc want_dst = dst_md;
      if (dst_md.is_zero())
        want_dst = memory::desc({b, c.out, oh, ow}, kF32, Tag::any);
      memory::desc w_user({c.out, c.in, c.kernel, c.kernel}, kF32, Tag::oihw);
      memory::desc w_any({c.out, c.in, c.kernel, c.kernel}, kF32, Tag::any);
      memory::desc bias_md({c.out}, kF32, Tag::x);
      dnnl::post_ops po;
      if (sum) po.append_sum(1.0f);
      if (relu)
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, src_md, w_any, bias_md, want_dst,
          {c.stride, c.stride}, {pad, pad}, {pad, pad});
      dnnl::convolution_forward::primitive_desc pd(desc, attr, p.engine);
      // A free-layout destination (dst_md zero) that is already allocated
      // is a reusable scratch buffer: keep it when the layout matches.
      if (!dst->get(true) ||
          (dst_md.is_zero() && dst->get_desc() != pd.dst_desc())) {
        *dst = memory(pd.dst_desc(), p.engine);
      }
      TrunkPlan::Step step;
      step.prim = dnnl::convolution_forward(pd);
      step.args[DNNL_ARG_SRC] = src;
      step.args[DNNL_ARG_DST] = *dst;
      step.args[DNNL_ARG_WEIGHTS] = ReorderedCopy(
          p.engine, p.stream, w_user, c.weight.data(), pd.weights_desc());
      step.args[DNNL_ARG_BIAS] = Wrap(p.engine, bias_md, c.bias.data());
      p.steps.push_back(std::move(step));
    };

    memory::desc in_md({b, 1, kFbankMelBins, kFbankFrames}, kF32, Tag::nchw);
    memory input = Wrap(p.engine, in_md, p.input.data());
    memory cur;
    add_conv(weights_->stem, input, memory::desc(), false, true, &cur);
    // conv1's output is consumed by conv2 of the same block, so one scratch
    // buffer per resolution serves every block (36 MB per window instead of
    // one buffer per block).
    memory y1;
    for (const Weights::Block& block : weights_->blocks) {
      add_conv(block.conv1, cur, memory::desc(), false, true, &y1);
      if (block.projection) {
        // conv2 picks its layout; the shortcut writes into that layout and
        // conv2 accumulates onto it.
        memory out;
        const FoldedConv& c2 = block.conv2;
        const memory::dims yd = y1.get_desc().dims();
        memory::desc c2_any({b, c2.out, yd[2], yd[3]}, kF32, Tag::any);
        // Query conv2's preferred dst layout first.
        {
          memory::desc w_any({c2.out, c2.in, 3, 3}, kF32, Tag::any);
          memory::desc bias_md({c2.out}, kF32, Tag::x);
          dnnl::post_ops po;
          po.append_sum(1.0f);
          po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
          dnnl::primitive_attr attr;
          attr.set_post_ops(po);
          dnnl::convolution_forward::desc desc(
              dnnl::prop_kind::forward_inference,
              dnnl::algorithm::convolution_direct, y1.get_desc(), w_any,
              bias_md, c2_any, {1, 1}, {1, 1}, {1, 1});
          dnnl::convolution_forward::primitive_desc pd(desc, attr, p.engine);
          out = memory(pd.dst_desc(), p.engine);
        }
        add_conv(block.shortcut, cur, out.get_desc(), false, false, &out);
        add_conv(block.conv2, y1, out.get_desc(), true, true, &out);
        cur = out;
      } else {
        // Identity shortcut: conv2 accumulates in place onto the block input.
        add_conv(block.conv2, y1, cur.get_desc(), true, true, &cur);
      }
    }
    // Trunk output to plain (B, 256, 10, 125): feature = channel·10 + row.
    memory::desc plain({b, kChannels[3], 10, kTrunkFrames}, kF32, Tag::nchw);
    memory trunk = Wrap(p.engine, plain, p.trunk.data());
    TrunkPlan::Step step;
    step.prim = dnnl::reorder(cur, trunk);
    step.args[DNNL_ARG_FROM] = cur;
    step.args[DNNL_ARG_TO] = trunk;
    p.steps.push_back(std::move(step));
  } catch (const dnnl::error& e) {
    return DnnlError(
        e, absl::StrCat("building ResNet34 primitives for batch ", batch));
  }
  TrunkPlan* raw = plan.get();
  trunk_plans_[batch] = std::move(plan);
  return raw;
}

absl::StatusOr<CpuEmbeddingModel::HeadPlan*> CpuEmbeddingModel::GetHeadPlan(
    int rows) {
  auto it = head_plans_.find(rows);
  if (it != head_plans_.end()) return it->second.get();
  auto plan = std::make_unique<HeadPlan>();
  HeadPlan& p = *plan;
  try {
    memory::desc src_md({rows, kStatsDim}, kF32, Tag::ab);
    memory::desc w_user({kStatsDim, kEmbeddingDim}, kF32, Tag::ba);
    memory::desc w_any({kStatsDim, kEmbeddingDim}, kF32, Tag::any);
    memory::desc bias_md({1, kEmbeddingDim}, kF32, Tag::ab);
    memory::desc dst_md({rows, kEmbeddingDim}, kF32, Tag::ab);
    dnnl::matmul::desc desc(src_md, w_any, bias_md, dst_md);
    dnnl::matmul::primitive_desc pd(desc, p.engine);
    p.prim = dnnl::matmul(pd);
    p.args[DNNL_ARG_SRC] = memory(src_md, p.engine, DNNL_MEMORY_NONE);
    p.args[DNNL_ARG_DST] = memory(dst_md, p.engine, DNNL_MEMORY_NONE);
    p.args[DNNL_ARG_WEIGHTS] = ReorderedCopy(
        p.engine, p.stream, w_user, weights_->seg_w.data(), pd.weights_desc());
    p.args[DNNL_ARG_BIAS] = Wrap(p.engine, bias_md, weights_->seg_b.data());
  } catch (const dnnl::error& e) {
    return DnnlError(
        e, absl::StrCat("building the seg_1 matmul for ", rows, " rows"));
  }
  HeadPlan* raw = plan.get();
  head_plans_[rows] = std::move(plan);
  return raw;
}

absl::Status CpuEmbeddingModel::Run(std::span<const float> windows, int batch,
                                    std::span<const float> masks,
                                    int masks_per_window,
                                    std::span<float> embeddings) {
  if (batch <= 0 || masks_per_window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch and masks_per_window must be > 0, got ", batch,
                     " and ", masks_per_window));
  }
  const size_t b = batch, s = masks_per_window;
  if (windows.size() != b * kWindowSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding input holds ", windows.size(),
                     " samples, expected ", batch, " × ", kWindowSamples));
  }
  if (masks.size() != b * s * kFramesPerWindow) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding masks hold ", masks.size(), " floats, expected ", batch,
        " × ", masks_per_window, " × ", kFramesPerWindow));
  }
  if (embeddings.size() != b * s * kEmbeddingDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding output holds ", embeddings.size(), " floats, expected ",
        batch, " × ", masks_per_window, " × ", kEmbeddingDim));
  }
  ApplyCpuThreads(options_.threads);
  // At most max_windows_per_run windows per run, so the plans (and their
  // activations) exist for a few fixed sizes only (cpu_options.h).
  for (const CpuRunChunk& c :
       CpuRunChunks(batch, options_.max_windows_per_run)) {
    const size_t first = c.first, count = c.count;
    RETURN_IF_ERROR(RunChunk(
        windows.subspan(first * kWindowSamples, count * kWindowSamples),
        c.count,
        masks.subspan(first * s * kFramesPerWindow,
                      count * s * kFramesPerWindow),
        masks_per_window,
        embeddings.subspan(first * s * kEmbeddingDim,
                           count * s * kEmbeddingDim)));
  }
  return absl::OkStatus();
}

absl::Status CpuEmbeddingModel::RunChunk(std::span<const float> windows,
                                         int batch,
                                         std::span<const float> masks,
                                         int masks_per_window,
                                         std::span<float> embeddings) {
  const size_t b = batch;
  ASSIGN_OR_RETURN(TrunkPlan * trunk, GetTrunkPlan(batch));
  ASSIGN_OR_RETURN(HeadPlan * head, GetHeadPlan(masks_per_window));

  StageTimer timer("embedding", batch);
  // Fbank per window, transposed to (mel, frame) for the trunk's (H, W).
  std::vector<absl::Status> statuses(b);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < batch; ++i) {
    std::vector<float> feats(kFbankFrames * kFbankMelBins);
    statuses[i] = fbank_->Compute(
        windows.subspan(i * kWindowSamples, kWindowSamples), feats);
    float* dst = trunk->input.data() +
                 static_cast<size_t>(i) * kFbankMelBins * kFbankFrames;
    for (int t = 0; t < kFbankFrames; ++t) {
      for (int m = 0; m < kFbankMelBins; ++m) {
        dst[m * kFbankFrames + t] = feats[t * kFbankMelBins + m];
      }
    }
  }
  for (const absl::Status& st : statuses) RETURN_IF_ERROR(st);
  timer.Mark("fbank");

  try {
    for (auto& step : trunk->steps) step.prim.execute(trunk->stream, step.args);
    trunk->stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlError(e, "running the ResNet34 trunk");
  }
  timer.Mark("resnet_trunk");

  // TSTP weighted statistics (pyannote StatsPool with weights), per mask.
  int frame_of[kTrunkFrames];
  for (int j = 0; j < kTrunkFrames; ++j) frame_of[j] = NearestMaskFrame(j);
  const int rows = batch * masks_per_window;
  std::vector<float> all_stats(static_cast<size_t>(rows) * kStatsDim);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    const int i = r / masks_per_window;
    const float* mask =
        masks.data() + static_cast<size_t>(r) * kFramesPerWindow;
    double wt[kTrunkFrames];
    double sum_w = 0.0, sum_w2 = 0.0;
    for (int j = 0; j < kTrunkFrames; ++j) {
      wt[j] = mask[frame_of[j]];
      sum_w += wt[j];
      sum_w2 += wt[j] * wt[j];
    }
    // The scalar denominators in float32 as pyannote computes them:
    // v1 = Σw + 1e-8, var denominator v1 − v2/v1 + 1e-8 (so one active frame
    // gives 1e-8 and zero variance, and an all-zero mask zero stats).
    const float v1 = static_cast<float>(sum_w) + 1e-8f;
    const float v2 = static_cast<float>(sum_w2);
    const float denom = (v1 - v2 / v1) + 1e-8f;
    const float* x = trunk->trunk.data() +
                     static_cast<size_t>(i) * kTrunkFeatures * kTrunkFrames;
    float* stats = all_stats.data() + static_cast<size_t>(r) * kStatsDim;
    for (int feat = 0; feat < kTrunkFeatures; ++feat) {
      const float* xf = x + static_cast<size_t>(feat) * kTrunkFrames;
      double acc = 0.0;
      for (int j = 0; j < kTrunkFrames; ++j) acc += wt[j] * xf[j];
      const double mean = acc / v1;
      double sq = 0.0;
      for (int j = 0; j < kTrunkFrames; ++j) {
        const double d = xf[j] - mean;
        sq += wt[j] * d * d;
      }
      stats[feat] = static_cast<float>(mean);
      stats[kTrunkFeatures + feat] = static_cast<float>(std::sqrt(sq / denom));
    }
  }
  timer.Mark("stats_pool");
  try {
    const size_t s = masks_per_window;
    for (size_t i = 0; i < b; ++i) {
      head->args[DNNL_ARG_SRC].set_data_handle(all_stats.data() +
                                               i * s * kStatsDim);
      head->args[DNNL_ARG_DST].set_data_handle(embeddings.data() +
                                               i * s * kEmbeddingDim);
      head->prim.execute(head->stream, head->args);
    }
    head->stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlError(e, "running seg_1");
  }
  timer.Mark("seg_1");
  return absl::OkStatus();
}

}  // namespace diarization::models
