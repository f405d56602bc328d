#include "engine/models/cpu/cpu_segmentation_model.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#define EIGEN_DONT_PARALLELIZE
#include <eigen3/Eigen/Core>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cpu/dnnl_util.h"
#include "engine/models/cpu/stage_timer.h"
#include "engine/models/format/model_specs.h"
#include "engine/models/format/weights.h"
#include "engine/models/sincnet_filters.h"

namespace diarization::models {
namespace {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

using HP = PyanNetHyperParameters;
constexpr int kHidden = HP::kLstmHidden;
constexpr int kGates = 4;  // LSTM: input, forget, cell, output
constexpr int kLayers = HP::kLstmLayers;
constexpr int kConvChannels = HP::kConvChannels;
constexpr int kLinear = HP::kLinearHidden;
constexpr float kEps = HP::kNormEps;
constexpr float kSlope = HP::kLeakySlope;
constexpr int kStride = HP::kSincStride;  // SincNet conv stride
// The 251 taps zero-padded to a multiple of the stride (260).
constexpr int kSincTaps = (kSincKernel + kStride - 1) / kStride * kStride;

// Lengths through SincNet for a 10 s window (models.md §1.2).
constexpr PyanNetLengths kLengths = PyanNetSincNetLengths(kWindowSamples);
constexpr int kConv0Len = kLengths.conv0;  // 15975
constexpr int kPool0Len = kLengths.pool0;  // 5325
constexpr int kConv1Len = kLengths.conv1;  // 5321
constexpr int kPool1Len = kLengths.pool1;  // 1773
constexpr int kConv2Len = kLengths.conv2;  // 1769
constexpr int kPool2Len = kLengths.pool2;  // 589
static_assert(kPool2Len == kFramesPerWindow);

// InstanceNorm statistics (biased variance) in double, as torch accumulates
// float batch-norm statistics; then y = x·α + β with α = γ/√(var+ε),
// β = b − mean·α (torch's batch_norm transform).
void NormalizeAffine(const float* x, int len, float gamma, float beta, float* y,
                     bool leaky) {
  double sum = 0.0;
  for (int i = 0; i < len; ++i) sum += x[i];
  const double mean = sum / len;
  double ss = 0.0;
  for (int i = 0; i < len; ++i) {
    const double d = x[i] - mean;
    ss += d * d;
  }
  const double invstd = 1.0 / std::sqrt(ss / len + kEps);
  const float alpha = static_cast<float>(invstd * gamma);
  const float shift = static_cast<float>(beta - mean * alpha);
  for (int i = 0; i < len; ++i) {
    const float v = x[i] * alpha + shift;
    y[i] = leaky && v < 0.0f ? v * kSlope : v;
  }
}

// Max-pool (k=3, s=3) over time, then InstanceNorm(affine) and leaky ReLU,
// for (batch, channels, in_len) → (batch, channels, in_len / 3).
void PoolNormLeaky(const float* in, int batch, int channels, int in_len,
                   const std::vector<float>& gamma,
                   const std::vector<float>& beta, float* out) {
  const int out_len = in_len / 3;
#pragma omp parallel for schedule(static)
  for (int bc = 0; bc < batch * channels; ++bc) {
    const float* x = in + static_cast<size_t>(bc) * in_len;
    float* y = out + static_cast<size_t>(bc) * out_len;
    for (int t = 0; t < out_len; ++t) {
      y[t] = std::max(std::max(x[3 * t], x[3 * t + 1]), x[3 * t + 2]);
    }
    const int c = bc % channels;
    NormalizeAffine(y, out_len, gamma[c], beta[c], y, /*leaky=*/true);
  }
}

// The LSTM recurrence of one bidirectional layer, given the input
// projections (batch, t, [fwd i f g o | bwd i f g o]) with both biases
// added. Each direction runs on its own thread (no synchronisation per time
// step). Per step and batch item, W_hh·h is an Eigen matrix-vector product
// (W_hh stays in PyTorch's (512, 128) row-major layout, read from cache,
// never repacked); the gates use libm's expf and tanhf.
// Output (batch, t, [h_fwd | h_bwd]). Each batch item's arithmetic is its
// own (a column of h and c), so its result does not depend on the batch.
void Recurrence(const std::vector<float> (&whh)[2], const float* gates,
                int batch, float* out) {
  // Two threads when the caller's OpenMP team allows it (threads = 1 runs
  // the directions one after the other).
  const int threads = std::min(2, omp_get_max_threads());
  using WeightMap = Eigen::Map<
      const Eigen::Matrix<float, kGates * kHidden, kHidden, Eigen::RowMajor>>;
  using Gates = Eigen::Array<float, kGates * kHidden, 1>;
  using State =
      Eigen::Matrix<float, kHidden, Eigen::Dynamic>;  // column per item
  constexpr int kG = kGates * kHidden;                // 512
  const int steps = kFramesPerWindow;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int d = 0; d < 2; ++d) {
    const WeightMap w(whh[d].data());
    State h = State::Zero(kHidden, batch);
    State c = State::Zero(kHidden, batch);
    Gates z;
    for (int s = 0; s < steps; ++s) {
      const int t = d == 0 ? s : steps - 1 - s;
      for (int b = 0; b < batch; ++b) {
        Eigen::Map<const Gates> pre(
            gates + (static_cast<size_t>(b) * steps + t) * 2 * kG + d * kG);
        z.matrix().noalias() = w * h.col(b);
        z += pre;
        // Gates with libm's correctly rounded-ish expf/tanhf: Eigen's
        // vectorised logistic/tanh approximations drift the real
        // segmentation-3.0 log-probs to 2.5e-4 from PyTorch over 589 steps
        // and 4 layers (the parity limit is 1e-4).
        float* cb = c.col(b).data();
        float* hb = h.col(b).data();
        for (int k = 0; k < kHidden; ++k) {
          const float i = 1.0f / (1.0f + std::exp(-z[k]));
          const float f = 1.0f / (1.0f + std::exp(-z[kHidden + k]));
          const float g = std::tanh(z[2 * kHidden + k]);
          const float o = 1.0f / (1.0f + std::exp(-z[3 * kHidden + k]));
          cb[k] = f * cb[k] + i * g;
          hb[k] = o * std::tanh(cb[k]);
        }
        Eigen::Map<Eigen::Matrix<float, kHidden, 1>>(
            out + (static_cast<size_t>(b) * steps + t) * 2 * kHidden +
            d * kHidden) = h.col(b);
      }
    }
  }
}

// As PoolNormLeaky, for input in (batch, time, channels) layout (the SincNet
// matmul's output); output (batch, channels, in_len / 3).
void PoolNormLeakyTimeMajor(const float* in, int batch, int channels,
                            int in_len, const std::vector<float>& gamma,
                            const std::vector<float>& beta, float* out) {
  const int out_len = in_len / 3;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < batch; ++i) {
    const float* x = in + static_cast<size_t>(i) * in_len * channels;
    float* y = out + static_cast<size_t>(i) * channels * out_len;
    for (int t = 0; t < out_len; ++t) {
      const float* r0 = x + static_cast<size_t>(3 * t) * channels;
      for (int c = 0; c < channels; ++c) {
        y[static_cast<size_t>(c) * out_len + t] =
            std::max(std::max(r0[c], r0[channels + c]), r0[2 * channels + c]);
      }
    }
  }
#pragma omp parallel for schedule(static)
  for (int bc = 0; bc < batch * channels; ++bc) {
    float* y = out + static_cast<size_t>(bc) * out_len;
    const int c = bc % channels;
    NormalizeAffine(y, out_len, gamma[c], beta[c], y, /*leaky=*/true);
  }
}

}  // namespace

struct CpuSegmentationModel::Weights {
  float wav_gamma = 1.0f, wav_beta = 0.0f;
  std::vector<float> sinc;         // (80, 1, 251)
  std::vector<float> sinc_padded;  // (80, 260), taps 251.. are zero
  std::vector<float> norm_gamma[3], norm_beta[3];
  std::vector<float> conv_w[2], conv_b[2];  // (60, C, 5), (60)
  // Per LSTM layer: ldigo weights (1, 2, in, 4, 128), (1, 2, 128, 4, 128),
  // ldgo bias (1, 2, 4, 128) = bias_ih + bias_hh.
  std::vector<float> lstm_wx[kLayers], lstm_wh[kLayers], lstm_b[kLayers];
  // The same in PyTorch's layout for the projection + recurrence path:
  // [W_ih; W_ih_reverse] (1024, in), W_hh per direction (512, 128).
  std::vector<float> lstm_wih_cat[kLayers], lstm_whh[kLayers][2];
  std::vector<float> lin_w[3], lin_b[3];  // linear.0, linear.1, classifier
};

struct CpuSegmentationModel::Plan {
  int batch = 0;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  std::vector<float> wav, conv0_out, pool0, conv1_out, pool1, conv2_out;
  std::vector<float> lstm_in, lstm_a, lstm_b;
  std::vector<float> sinc_frames;  // (15975, 260) frames of one window
  std::vector<float> lin0_out, lin1_out, logits;

  // A primitive built for one window's shapes and run once per window of
  // the batch, its buffers moved on by `per_window` floats each time. oneDNN
  // picks kernels and blockings (the K split of its sgemm, for one) from the
  // problem's shape: on AVX2 machines the same rows gave other bits at 589
  // and 2356 rows. At one window's shape a window's result is the same
  // whatever its batch-mates (cpu_segmentation_model_test).
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
    struct Moving {
      int arg;
      float* base;
      size_t per_window;
    };
    std::vector<Moving> moving;
  };
  std::vector<Step> sincnet_convs;  // conv0, conv1, conv2
  std::vector<Step> lstms;          // 4 layers (oneDNN lstm_forward, batched)
  std::vector<Step> lstm_proj;      // 4 layers (input projection matmul)
  std::vector<float> gates;         // (batch, t, 2 × 512) projections
  std::vector<Step> linears;        // linear.0, linear.1, classifier
};

CpuSegmentationModel::CpuSegmentationModel() = default;
CpuSegmentationModel::~CpuSegmentationModel() = default;

absl::StatusOr<std::unique_ptr<CpuSegmentationModel>>
CpuSegmentationModel::Create(const SafetensorsFile& file,
                             const CpuModelOptions& options) {
  std::unique_ptr<CpuSegmentationModel> model(new CpuSegmentationModel());
  model->options_ = options;
  // Primitive descriptors size their work split by the thread count at
  // creation, so the plans built here must see the configured count too.
  ApplyCpuThreads(options.threads);
  auto w = std::make_unique<Weights>();

  ASSIGN_OR_RETURN(auto wav_g, ReadF32(file, "sincnet.wav_norm1d.weight", {1}));
  ASSIGN_OR_RETURN(auto wav_b, ReadF32(file, "sincnet.wav_norm1d.bias", {1}));
  w->wav_gamma = wav_g[0];
  w->wav_beta = wav_b[0];
  const std::string fb = "sincnet.conv1d.0.filterbank.";
  ASSIGN_OR_RETURN(auto low, ReadF32(file, fb + "low_hz_", {kSincBands, 1}));
  ASSIGN_OR_RETURN(auto band, ReadF32(file, fb + "band_hz_", {kSincBands, 1}));
  ASSIGN_OR_RETURN(auto window,
                   ReadF32(file, fb + "window_", {kSincHalfKernel}));
  ASSIGN_OR_RETURN(auto n, ReadF32(file, fb + "n_", {1, kSincHalfKernel}));
  ASSIGN_OR_RETURN(w->sinc, ComputeSincFilters(low, band, window, n));
  w->sinc_padded.assign(kSincFilters * kSincTaps, 0.0f);
  for (int c = 0; c < kSincFilters; ++c) {
    std::copy(w->sinc.begin() + c * kSincKernel,
              w->sinc.begin() + (c + 1) * kSincKernel,
              w->sinc_padded.begin() + c * kSincTaps);
  }

  const int norm_channels[3] = {kSincFilters, kConvChannels, kConvChannels};
  for (int i = 0; i < 3; ++i) {
    const std::string p = absl::StrCat("sincnet.norm1d.", i, ".");
    ASSIGN_OR_RETURN(w->norm_gamma[i],
                     ReadF32(file, p + "weight", {norm_channels[i]}));
    ASSIGN_OR_RETURN(w->norm_beta[i],
                     ReadF32(file, p + "bias", {norm_channels[i]}));
  }
  for (int i = 0; i < 2; ++i) {
    const std::string p = absl::StrCat("sincnet.conv1d.", i + 1, ".");
    const int in = i == 0 ? kSincFilters : kConvChannels;
    ASSIGN_OR_RETURN(
        w->conv_w[i],
        ReadF32(file, p + "weight", {kConvChannels, in, HP::kConvKernel}));
    ASSIGN_OR_RETURN(w->conv_b[i], ReadF32(file, p + "bias", {kConvChannels}));
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    const int in = layer == 0 ? kConvChannels : 2 * kHidden;
    w->lstm_wx[layer].assign(2 * in * kGates * kHidden, 0.0f);
    w->lstm_wh[layer].assign(2 * kHidden * kGates * kHidden, 0.0f);
    w->lstm_b[layer].assign(2 * kGates * kHidden, 0.0f);
    for (int d = 0; d < 2; ++d) {
      const std::string s = absl::StrCat("_l", layer, d == 1 ? "_reverse" : "");
      ASSIGN_OR_RETURN(auto wih, ReadF32(file, "lstm.weight_ih" + s,
                                         {kGates * kHidden, in}));
      ASSIGN_OR_RETURN(auto whh, ReadF32(file, "lstm.weight_hh" + s,
                                         {kGates * kHidden, kHidden}));
      ASSIGN_OR_RETURN(auto bih,
                       ReadF32(file, "lstm.bias_ih" + s, {kGates * kHidden}));
      ASSIGN_OR_RETURN(auto bhh,
                       ReadF32(file, "lstm.bias_hh" + s, {kGates * kHidden}));
      // PyTorch rows are [i | f | g | o] × 128, oneDNN's gate order is the
      // same (i, f, c̃, o); ldigo puts the input index outside the gates.
      for (int go = 0; go < kGates * kHidden; ++go) {
        for (int i = 0; i < in; ++i) {
          w->lstm_wx[layer]
                    [(static_cast<size_t>(d) * in + i) * kGates * kHidden +
                     go] = wih[static_cast<size_t>(go) * in + i];
        }
        for (int i = 0; i < kHidden; ++i) {
          w->lstm_wh[layer]
                    [(static_cast<size_t>(d) * kHidden + i) * kGates * kHidden +
                     go] = whh[static_cast<size_t>(go) * kHidden + i];
        }
        w->lstm_b[layer][d * kGates * kHidden + go] = bih[go] + bhh[go];
      }
      w->lstm_wih_cat[layer].insert(w->lstm_wih_cat[layer].end(), wih.begin(),
                                    wih.end());
      w->lstm_whh[layer][d] = std::move(whh);
    }
  }
  const char* lin_names[3] = {"linear.0", "linear.1", "classifier"};
  const int lin_in[3] = {2 * kHidden, kLinear, kLinear};
  const int lin_out[3] = {kLinear, kLinear, kPowersetClasses};
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(w->lin_w[i],
                     ReadF32(file, absl::StrCat(lin_names[i], ".weight"),
                             {lin_out[i], lin_in[i]}));
    ASSIGN_OR_RETURN(
        w->lin_b[i],
        ReadF32(file, absl::StrCat(lin_names[i], ".bias"), {lin_out[i]}));
  }
  model->weights_ = std::move(w);
  // Build a batch-1 plan now so that a bad oneDNN setup fails at load, then
  // drop it: plans must be built on the thread that runs them. A plan built
  // on the loading thread and executed on the engine's device-worker thread
  // crashed inside oneDNN's convolution (server, first batch of 1 window).
  RETURN_IF_ERROR(model->GetPlan(1).status());
  model->plans_.clear();
  return model;
}

absl::StatusOr<CpuSegmentationModel::Plan*> CpuSegmentationModel::GetPlan(
    int batch) {
  auto it = plans_.find(batch);
  if (it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  const Weights& w = *weights_;
  const int64_t b = batch;
  p.batch = batch;
  try {
    p.wav.resize(b * kWindowSamples);
    p.conv0_out.resize(b * kSincFilters * kConv0Len);
    p.pool0.resize(b * kSincFilters * kPool0Len);
    p.conv1_out.resize(b * kConvChannels * kConv1Len);
    p.pool1.resize(b * kConvChannels * kPool1Len);
    p.conv2_out.resize(b * kConvChannels * kConv2Len);
    p.lstm_in.resize(b * kFramesPerWindow * kConvChannels);
    p.lstm_a.resize(b * kFramesPerWindow * 2 * kHidden);
    p.lstm_b.resize(b * kFramesPerWindow * 2 * kHidden);
    p.gates.resize(b * kFramesPerWindow * 2 * kGates * kHidden);
    p.lin0_out.resize(b * kFramesPerWindow * kLinear);
    p.lin1_out.resize(b * kFramesPerWindow * kLinear);
    p.logits.resize(b * kFramesPerWindow * kPowersetClasses);

    // SincNet convolutions on plain (batch, channel, time) buffers.
    struct ConvSpec {
      float* src;
      int ic;
      int src_len;
      float* dst;
      int oc;
      int dst_len;
      int k;
      int stride;
      const float* wts;
      const float* bias;
      bool abs;
    };
    {
      // SincNet's stride-10 conv as a matmul over explicit frames: row t of
      // the (frames, 260) source is x[10t .. 10t + 259] (a contiguous copy,
      // 16.6 MB per window, reused window by window); the weights are the
      // 80 filters padded to 260 taps; |.| is a post-op. Output
      // (frame, filter) per window.
      memory::desc src_md({kConv0Len, kSincTaps}, kF32, Tag::ab);
      memory::desc w_user({kSincTaps, kSincFilters}, kF32, Tag::ba);
      memory::desc w_any({kSincTaps, kSincFilters}, kF32, Tag::any);
      memory::desc dst_md({kConv0Len, kSincFilters}, kF32, Tag::ab);
      dnnl::post_ops po;
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_abs, 0.f, 0.f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_any, dst_md),
                                      attr, p.engine);
      p.sinc_frames.resize(static_cast<size_t>(kConv0Len) * kSincTaps);
      Plan::Step step;
      step.prim = dnnl::matmul(pd);
      step.args[DNNL_ARG_SRC] = Wrap(p.engine, src_md, p.sinc_frames.data());
      step.args[DNNL_ARG_DST] = Wrap(p.engine, dst_md, p.conv0_out.data());
      step.args[DNNL_ARG_WEIGHTS] = ReorderedCopy(
          p.engine, p.stream, w_user, w.sinc_padded.data(), pd.weights_desc());
      p.sincnet_convs.push_back(std::move(step));
    }
    const ConvSpec convs[2] = {
        {p.pool0.data(), kSincFilters, kPool0Len, p.conv1_out.data(),
         kConvChannels, kConv1Len, HP::kConvKernel, 1, w.conv_w[0].data(),
         w.conv_b[0].data(), false},
        {p.pool1.data(), kConvChannels, kPool1Len, p.conv2_out.data(),
         kConvChannels, kConv2Len, HP::kConvKernel, 1, w.conv_w[1].data(),
         w.conv_b[1].data(), false},
    };
    for (const ConvSpec& c : convs) {
      memory::desc src_md({1, c.ic, c.src_len}, kF32, Tag::ncw);
      memory::desc dst_md({1, c.oc, c.dst_len}, kF32, Tag::ncw);
      memory::desc w_user({c.oc, c.ic, c.k}, kF32, Tag::oiw);
      memory::desc w_any({c.oc, c.ic, c.k}, kF32, Tag::any);
      memory::desc bias_md({c.oc}, kF32, Tag::x);
      dnnl::post_ops po;
      if (c.abs)
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_abs, 0.f, 0.f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      auto desc = c.bias != nullptr
                      ? dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference,
                            dnnl::algorithm::convolution_direct, src_md, w_any,
                            bias_md, dst_md, {c.stride}, {0}, {0})
                      : dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference,
                            dnnl::algorithm::convolution_direct, src_md, w_any,
                            dst_md, {c.stride}, {0}, {0});
      dnnl::convolution_forward::primitive_desc pd(desc, attr, p.engine);
      Plan::Step step;
      step.prim = dnnl::convolution_forward(pd);
      step.args[DNNL_ARG_SRC] = Wrap(p.engine, src_md, c.src);
      step.args[DNNL_ARG_DST] = Wrap(p.engine, dst_md, c.dst);
      step.args[DNNL_ARG_WEIGHTS] =
          ReorderedCopy(p.engine, p.stream, w_user, c.wts, pd.weights_desc());
      if (c.bias != nullptr)
        step.args[DNNL_ARG_BIAS] = Wrap(p.engine, bias_md, c.bias);
      step.moving = {
          {DNNL_ARG_SRC, c.src, static_cast<size_t>(c.ic) * c.src_len},
          {DNNL_ARG_DST, c.dst, static_cast<size_t>(c.oc) * c.dst_len}};
      p.sincnet_convs.push_back(std::move(step));
    }

    // Bidirectional LSTM, one primitive per layer (layer 0 has 60 inputs,
    // the others 256), batch-major (batch, t, feature): one window's rows
    // are contiguous, so the matmuls below run window by window.
    const int64_t t = kFramesPerWindow;
    for (int layer = 0; layer < kLayers; ++layer) {
      const int64_t in = layer == 0 ? kConvChannels : 2 * kHidden;
      float* src = layer == 0
                       ? p.lstm_in.data()
                       : (layer % 2 == 1 ? p.lstm_a.data() : p.lstm_b.data());
      float* dst = layer % 2 == 0 ? p.lstm_a.data() : p.lstm_b.data();
      // The lstm_forward option runs the whole batch in one primitive: it
      // is kept as a reference path and is not batch-invariant.
      memory::desc src_md({t, b, in}, kF32, Tag::ntc);
      memory::desc dst_md({t, b, 2 * kHidden}, kF32, Tag::ntc);
      memory::desc wx_user({1, 2, in, kGates, kHidden}, kF32, Tag::ldigo);
      memory::desc wh_user({1, 2, kHidden, kGates, kHidden}, kF32, Tag::ldigo);
      memory::desc wx_any({1, 2, in, kGates, kHidden}, kF32, Tag::any);
      memory::desc wh_any({1, 2, kHidden, kGates, kHidden}, kF32, Tag::any);
      memory::desc bias_md({1, 2, kGates, kHidden}, kF32, Tag::ldgo);
      dnnl::lstm_forward::desc desc(dnnl::prop_kind::forward_inference,
                                    dnnl::rnn_direction::bidirectional_concat,
                                    src_md, memory::desc(), memory::desc(),
                                    wx_any, wh_any, bias_md, dst_md,
                                    memory::desc(), memory::desc());
      dnnl::lstm_forward::primitive_desc pd(desc, p.engine);
      Plan::Step step;
      step.prim = dnnl::lstm_forward(pd);
      step.args[DNNL_ARG_SRC_LAYER] = Wrap(p.engine, src_md, src);
      step.args[DNNL_ARG_DST_LAYER] = Wrap(p.engine, dst_md, dst);
      step.args[DNNL_ARG_WEIGHTS_LAYER] =
          ReorderedCopy(p.engine, p.stream, wx_user, w.lstm_wx[layer].data(),
                        pd.weights_layer_desc());
      step.args[DNNL_ARG_WEIGHTS_ITER] =
          ReorderedCopy(p.engine, p.stream, wh_user, w.lstm_wh[layer].data(),
                        pd.weights_iter_desc());
      step.args[DNNL_ARG_BIAS] =
          Wrap(p.engine, bias_md, w.lstm_b[layer].data());
      p.lstms.push_back(std::move(step));

      // Projection path: gates_pre = x · [W_ih; W_ih_rev]ᵀ + (b_ih + b_hh)
      // for a window's frames and both directions in one matmul.
      memory::desc psrc_md({t, in}, kF32, Tag::ab);
      memory::desc pw_user({in, 2 * kGates * kHidden}, kF32, Tag::ba);
      memory::desc pw_any({in, 2 * kGates * kHidden}, kF32, Tag::any);
      memory::desc pbias_md({1, 2 * kGates * kHidden}, kF32, Tag::ab);
      memory::desc pdst_md({t, 2 * kGates * kHidden}, kF32, Tag::ab);
      dnnl::matmul::primitive_desc ppd(
          dnnl::matmul::desc(psrc_md, pw_any, pbias_md, pdst_md), p.engine);
      Plan::Step proj;
      proj.prim = dnnl::matmul(ppd);
      proj.args[DNNL_ARG_SRC] = Wrap(p.engine, psrc_md, src);
      proj.args[DNNL_ARG_DST] = Wrap(p.engine, pdst_md, p.gates.data());
      proj.args[DNNL_ARG_WEIGHTS] =
          ReorderedCopy(p.engine, p.stream, pw_user,
                        w.lstm_wih_cat[layer].data(), ppd.weights_desc());
      proj.args[DNNL_ARG_BIAS] =
          Wrap(p.engine, pbias_md, w.lstm_b[layer].data());
      proj.moving = {{DNNL_ARG_SRC, src, static_cast<size_t>(t * in)},
                     {DNNL_ARG_DST, p.gates.data(),
                      static_cast<size_t>(t) * 2 * kGates * kHidden}};
      p.lstm_proj.push_back(std::move(proj));
    }

    // Linears on a window's (t, features) rows; PyTorch's (out, in) weight
    // is the (in, out) matrix in "ba" layout.
    float* lstm_out = kLayers % 2 == 0 ? p.lstm_b.data() : p.lstm_a.data();
    float* lin_src[3] = {lstm_out, p.lin0_out.data(), p.lin1_out.data()};
    float* lin_dst[3] = {p.lin0_out.data(), p.lin1_out.data(), p.logits.data()};
    const int64_t lin_in[3] = {2 * kHidden, kLinear, kLinear};
    const int64_t lin_out[3] = {kLinear, kLinear, kPowersetClasses};
    const int64_t rows = t;
    for (int i = 0; i < 3; ++i) {
      memory::desc src_md({rows, lin_in[i]}, kF32, Tag::ab);
      memory::desc w_user({lin_in[i], lin_out[i]}, kF32, Tag::ba);
      memory::desc w_any({lin_in[i], lin_out[i]}, kF32, Tag::any);
      memory::desc bias_md({1, lin_out[i]}, kF32, Tag::ab);
      memory::desc dst_md({rows, lin_out[i]}, kF32, Tag::ab);
      dnnl::post_ops po;
      if (i < 2) {
        // leaky_relu(0.01) = oneDNN's relu with negative slope alpha.
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, kSlope, 0.f);
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      dnnl::matmul::desc desc(src_md, w_any, bias_md, dst_md);
      dnnl::matmul::primitive_desc pd(desc, attr, p.engine);
      Plan::Step step;
      step.prim = dnnl::matmul(pd);
      step.args[DNNL_ARG_SRC] = Wrap(p.engine, src_md, lin_src[i]);
      step.args[DNNL_ARG_DST] = Wrap(p.engine, dst_md, lin_dst[i]);
      step.args[DNNL_ARG_WEIGHTS] = ReorderedCopy(
          p.engine, p.stream, w_user, w.lin_w[i].data(), pd.weights_desc());
      step.args[DNNL_ARG_BIAS] = Wrap(p.engine, bias_md, w.lin_b[i].data());
      step.moving = {
          {DNNL_ARG_SRC, lin_src[i], static_cast<size_t>(t * lin_in[i])},
          {DNNL_ARG_DST, lin_dst[i], static_cast<size_t>(t * lin_out[i])}};
      p.linears.push_back(std::move(step));
    }
  } catch (const dnnl::error& e) {
    return DnnlError(
        e, absl::StrCat("building segmentation primitives for batch ", batch));
  }
  Plan* raw = plan.get();
  plans_[batch] = std::move(plan);
  return raw;
}

absl::Status CpuSegmentationModel::Run(std::span<const float> windows,
                                       int batch, std::span<float> log_probs) {
  if (batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch must be > 0, got ", batch));
  }
  const size_t b = batch;
  if (windows.size() != b * kWindowSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("segmentation input holds ", windows.size(),
                     " samples, expected ", batch, " × ", kWindowSamples));
  }
  if (log_probs.size() != b * kFramesPerWindow * kPowersetClasses) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segmentation output holds ", log_probs.size(), " floats, expected ",
        batch, " × ", kFramesPerWindow, " × ", kPowersetClasses));
  }
  ApplyCpuThreads(options_.threads);
  // At most max_windows_per_run windows per run, so the plans (and their
  // activations) exist for a few fixed sizes only (cpu_options.h).
  const size_t per_window = kFramesPerWindow * kPowersetClasses;
  for (const CpuRunChunk& c :
       CpuRunChunks(batch, options_.max_windows_per_run)) {
    const size_t first = c.first, count = c.count;
    RETURN_IF_ERROR(RunChunk(
        windows.subspan(first * kWindowSamples, count * kWindowSamples),
        c.count, log_probs.subspan(first * per_window, count * per_window)));
  }
  return absl::OkStatus();
}

absl::Status CpuSegmentationModel::RunChunk(std::span<const float> windows,
                                            int batch,
                                            std::span<float> log_probs) {
  const size_t b = batch;
  ASSIGN_OR_RETURN(Plan * p, GetPlan(batch));
  const Weights& w = *weights_;
  StageTimer timer("segmentation", batch);
  try {
    // 1. InstanceNorm over each window's samples.
#pragma omp parallel for schedule(static)
    for (int i = 0; i < batch; ++i) {
      NormalizeAffine(windows.data() + i * kWindowSamples, kWindowSamples,
                      w.wav_gamma, w.wav_beta,
                      p->wav.data() + i * kWindowSamples,
                      /*leaky=*/false);
    }
    timer.Mark("wav_norm");
    // 2–9. SincNet.
    auto run = [&](Plan::Step& s) { s.prim.execute(p->stream, s.args); };
    // A window-shaped step over every window of the batch (Plan::Step).
    auto run_per_window = [&](Plan::Step& s) {
      for (size_t i = 0; i < b; ++i) {
        for (const Plan::Step::Moving& m : s.moving) {
          s.args[m.arg].set_data_handle(m.base + i * m.per_window);
        }
        s.prim.execute(p->stream, s.args);
      }
      p->stream.wait();
    };
    {
      Plan::Step& sinc = p->sincnet_convs[0];
      for (int i = 0; i < batch; ++i) {
        const float* x =
            p->wav.data() + static_cast<size_t>(i) * kWindowSamples;
        float* frames = p->sinc_frames.data();
        // x has 160000 samples and the last frame ends at 10·15974 + 259
        // = 159999: every row is in range.
#pragma omp parallel for schedule(static)
        for (int t = 0; t < kConv0Len; ++t) {
          std::copy(x + kStride * t, x + kStride * t + kSincTaps,
                    frames + static_cast<size_t>(t) * kSincTaps);
        }
        sinc.args[DNNL_ARG_DST].set_data_handle(p->conv0_out.data() +
                                                static_cast<size_t>(i) *
                                                    kConv0Len * kSincFilters);
        sinc.prim.execute(p->stream, sinc.args);
        p->stream.wait();
      }
    }
    timer.Mark("sinc_conv");
    PoolNormLeakyTimeMajor(p->conv0_out.data(), batch, kSincFilters, kConv0Len,
                           w.norm_gamma[0], w.norm_beta[0], p->pool0.data());
    timer.Mark("pool_norm0");
    run_per_window(p->sincnet_convs[1]);
    PoolNormLeaky(p->conv1_out.data(), batch, kConvChannels, kConv1Len,
                  w.norm_gamma[1], w.norm_beta[1], p->pool1.data());
    run_per_window(p->sincnet_convs[2]);
    std::vector<float> pooled(b * kConvChannels * kPool2Len);
    PoolNormLeaky(p->conv2_out.data(), batch, kConvChannels, kConv2Len,
                  w.norm_gamma[2], w.norm_beta[2], pooled.data());
    // 10. (batch, channel, frame) → (batch, frame, channel) for the LSTM.
    for (size_t i = 0; i < b; ++i) {
      for (int c = 0; c < kConvChannels; ++c) {
        const float* src = pooled.data() + (i * kConvChannels + c) * kPool2Len;
        for (int t = 0; t < kPool2Len; ++t) {
          p->lstm_in[(i * kPool2Len + t) * kConvChannels + c] = src[t];
        }
      }
    }
    timer.Mark("conv1_conv2");
    // 11–14. LSTM and linears.
    if (options_.lstm == CpuLstmImpl::kOneDnnPrimitive) {
      for (auto& s : p->lstms) run(s);
    } else {
      for (int layer = 0; layer < kLayers; ++layer) {
        run_per_window(p->lstm_proj[layer]);
        timer.Mark("proj");
        float* dst = layer % 2 == 0 ? p->lstm_a.data() : p->lstm_b.data();
        Recurrence(w.lstm_whh[layer], p->gates.data(), batch, dst);
        timer.Mark("recurrence");
      }
    }
    timer.Mark("lstm");
    for (auto& s : p->linears) run_per_window(s);
    timer.Mark("linears");
  } catch (const dnnl::error& e) {
    return DnnlError(e, "running the segmentation network");
  }
  // 15. Log-softmax, rows (batch, frame) → output (batch, frame, class).
  for (size_t i = 0; i < b; ++i) {
    for (int t = 0; t < kFramesPerWindow; ++t) {
      const float* z =
          p->logits.data() + (i * kFramesPerWindow + t) * kPowersetClasses;
      float* out =
          log_probs.data() + (i * kFramesPerWindow + t) * kPowersetClasses;
      float mx = z[0];
      for (int c = 1; c < kPowersetClasses; ++c) mx = std::max(mx, z[c]);
      double sum = 0.0;
      for (int c = 0; c < kPowersetClasses; ++c)
        sum += std::exp(double(z[c]) - mx);
      const float lse = static_cast<float>(std::log(sum));
      for (int c = 0; c < kPowersetClasses; ++c) out[c] = (z[c] - mx) - lse;
    }
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
