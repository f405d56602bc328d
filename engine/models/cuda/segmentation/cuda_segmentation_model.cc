#include "engine/models/cuda/segmentation/cuda_segmentation_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
#include "engine/models/cuda/segmentation/cuda_segmentation_layout.h"
#include "engine/models/format/model_specs.h"
#include "engine/models/format/weights.h"
#include "engine/models/sincnet_filters.h"
#include "kernels/conv1d_pool.h"
#include "kernels/cooperative_token.h"
#include "kernels/lstm.h"
#include "kernels/lstm_cluster.h"
#include "kernels/nn_ops.h"
#include "kernels/qualification.h"
#include "kernels/sinc_conv.h"

namespace diarization::models {
namespace {

using cuda::CublasStatus;
using cuda::CudaContext;
using cuda::CudaStatus;
using cuda::DeviceBuffer;

using HP = PyanNetHyperParameters;
constexpr int kSinc = HP::kSincFilters, kConv = HP::kConvChannels,
              kHidden = HP::kLstmHidden, kLayers = HP::kLstmLayers;
constexpr float kSlope = HP::kLeakySlope;
constexpr int kSincStride = HP::kSincStride, kConvKernel = HP::kConvKernel;
// Lengths along the chain (models.md §1.2) for one window.
constexpr PyanNetLengths kLengths = PyanNetSincNetLengths(kWindowSamples);
constexpr int kP0 = kLengths.pool0;  // 5325
constexpr int kP1 = kLengths.pool1;  // 1773
constexpr int kP2 = kLengths.pool2;  // 589
static_assert(kP2 == kFramesPerWindow);
// The kernels' compile-time sizes (kernels/ does not include the shapes).
static_assert(kernels::kLstmHidden == HP::kLstmHidden);
static_assert(kernels::kSincConvChannels == HP::kSincFilters);
static_assert(kernels::kSincConvMaxTaps >= HP::kSincKernel);
static_assert(kernels::kConv1dPoolOutChannels == HP::kConvChannels &&
              kernels::kConv1dPoolTaps == HP::kConvKernel &&
              kernels::Conv1dPoolLength(kP0) == kP1 &&
              kernels::Conv1dPoolLength(kP1) == kP2);

struct Norm {
  DeviceBuffer gamma, beta;
};

struct LstmLayer {
  int input = 0;
  // gates = X·W_ihᵀ + (b_ih + b_hh), W_ih (1024, input): forward rows then
  // reverse rows; the bias added in the GEMM's epilogue.
  std::unique_ptr<cuda::Linear> input_projection;
  DeviceBuffer w_hh_t;  // (2, 128, 512)
};

}  // namespace

struct CudaSegmentationModel::Impl {
  CudaModelOptions options;
  CudaHarnessOptions harness;
  // Declared first: destroyed last, after every buffer went back to it.
  std::shared_ptr<DeviceArena> arena_owner;
  DeviceArena* arena = nullptr;
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<cuda::GraphCache> graphs;

  Norm wav_norm, norm[3];
  // conv1d.1 and conv1d.2: weights in the direct kernel's (in, 5, 60)
  // layout (kernels::Conv1dPoolWeights) and biases. Both layers always run
  // on kernels/conv1d_pool (ADR 0093: the segmentation stage 2-3 % shorter
  // on an H200 than cuDNN + a separate max-pool, fixture RTTMs unchanged).
  DeviceBuffer conv1d_weights[2];
  DeviceBuffer conv_bias[2];
  DeviceBuffer sinc_filters;  // (80, 251), for the direct kernel
  // The filters are even / odd about their centre, as ComputeSincFilters
  // writes them: the direct kernel then reads each tap pair once.
  bool sinc_symmetric = false;
  LstmLayer lstm[kLayers];
  // Index n: batches of n windows run the cluster recurrence kernel, with
  // lstm_group[n] windows per cluster.
  std::vector<bool> lstm_cluster;
  std::vector<int> lstm_group;
  std::string lstm_selection;  // one line, for the log and GetInfo
  std::unique_ptr<cuda::Linear> linear[2], classifier;

  // Activations: one buffer, each tensor where `layout` puts it
  // (cuda_segmentation_layout.h: "packed", or the harness's reference). The
  // window upload stages the covering audio in the layout's staging range
  // and gathers it into `audio`, which sits at the buffer's start, as does
  // `out`, which the download reads.
  SegmentationActivationLayout layout;
  DeviceBuffer activations;
  float *audio = nullptr, *normed = nullptr, *p0 = nullptr, *p1 = nullptr,
        *pooled2 = nullptr, *seq = nullptr, *gates = nullptr, *h[kLayers] = {},
        *lin[2] = {nullptr, nullptr}, *logits = nullptr, *out = nullptr;
  cuda::WindowUploader uploader;
  cuda::BusyTimer busy;
  cuda::PinnedBuffer host_out;

  ~Impl() {
    if (ctx) cudaStreamSynchronize(ctx->stream());
    graphs.reset();
  }
  absl::Status Enqueue(int n);
  // SincNet's 1-D convolution i (1 or 2) of n windows with its bias and
  // max-pool: `in` (in_channels × in_len per window) -> `pooled`, on the
  // project's kernel (the unpooled output is never written).
  absl::Status ConvBiasPool(int i, int n, const float* in, int in_channels,
                            int in_len, float* pooled);
  absl::Status ChooseLstmKernels();
};

namespace {

// "1-8, 12, 30-32" for the sorted batch sizes in `v`.
std::string Ranges(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    absl::StrAppend(&s, s.empty() ? "" : ", ", v[i]);
    if (j > i) absl::StrAppend(&s, "-", v[j]);
    i = j + 1;
  }
  return s;
}

}  // namespace

// Per batch size: the cluster kernel where the qualification record
// qualifies it on this device (or where options force it), else the
// resident kernel; the cluster kernel's group size is the one the record
// qualified (the fastest measured), or the kernel's default where the record
// has none or options force the cluster kernel. A device that cannot host
// the cluster grid falls back everywhere, and says so.
absl::Status CudaSegmentationModel::Impl::ChooseLstmKernels() {
  const int max_batch = options.max_batch;
  lstm_cluster.assign(max_batch + 1, false);
  lstm_group.assign(max_batch + 1, 0);
  const std::string& mode = options.lstm_kernel;
  if (mode == "resident") {
    lstm_selection = "LSTM recurrence: resident kernel (lstm_kernel=resident)";
    return absl::OkStatus();
  }
  if (mode != "cluster" && mode != "qualified") {
    return absl::InvalidArgumentError(absl::StrCat(
        "lstm_kernel must be qualified, cluster or resident, not '", mode,
        "'"));
  }
  const int device = arena->device();
  absl::StatusOr<kernels::LstmClusterPlan> plan = kernels::PlanLstmCluster(
      {.batch = 1, .steps = kP2, .device_share = harness.lstm_device_share});
  if (!plan.ok()) {
    if (mode == "cluster" ||
        plan.status().code() != absl::StatusCode::kFailedPrecondition) {
      return plan.status();
    }
    lstm_selection = absl::StrCat(
        "LSTM recurrence: resident kernel (this device cannot host the "
        "cluster grid: ",
        plan.status().message(), ")");
    return absl::OkStatus();
  }
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device),
                             "cudaGetDeviceProperties"));
  const std::string cc = absl::StrCat(prop.major, ".", prop.minor);
  std::vector<int> cluster;
  std::map<int, std::vector<int>> by_group;  // group → batch sizes
  std::string why_not;
  for (int n = 1; n <= max_batch; ++n) {
    // The kernel's default unless the record or the options name one.
    int group = mode == "cluster" &&
                        n < static_cast<int>(harness.lstm_cluster_groups.size())
                    ? harness.lstm_cluster_groups[n]
                    : 0;
    if (mode == "qualified") {
      const kernels::KernelSelection s = kernels::SelectEmbeddedQualified(
          "lstm_cluster", n, "fp32", prop.name, cc);
      if (!s.use_custom) {
        if (why_not.empty()) why_not = s.reason;
        continue;
      }
      group = s.group;
    }
    // Each batch size's plan now, outside any graph capture (the launcher
    // caches the occupancy query per device and group size).
    absl::StatusOr<kernels::LstmClusterPlan> pn =
        kernels::PlanLstmCluster({.batch = n,
                                  .steps = kP2,
                                  .group = group,
                                  .device_share = harness.lstm_device_share});
    if (!pn.ok()) {
      if (mode == "cluster") return pn.status();
      if (why_not.empty()) {
        why_not = absl::StrCat("batch ", n, " group ", group, ": ",
                               pn.status().message());
      }
      continue;
    }
    lstm_cluster[n] = true;
    lstm_group[n] = pn->group;
    cluster.push_back(n);
    by_group[pn->group].push_back(n);
  }
  if (cluster.empty()) {
    lstm_selection =
        absl::StrCat("LSTM recurrence: resident kernel (", why_not, ")");
  } else {
    std::string groups;
    for (const auto& [g, batches] : by_group) {
      absl::StrAppend(&groups, groups.empty() ? "" : ", ", g, " for ",
                      Ranges(batches));
    }
    lstm_selection = absl::StrCat(
        "LSTM recurrence: cluster kernel for batch ", Ranges(cluster),
        " (windows per cluster ", groups,
        mode == "qualified"                   ? ", as qualified"
        : harness.lstm_cluster_groups.empty() ? ", default"
                                              : ", as given",
        "; max ", plan->max_active_clusters, " co-resident clusters, share ",
        harness.lstm_device_share, ")",
        static_cast<int>(cluster.size()) == max_batch
            ? ""
            : absl::StrCat("; resident kernel otherwise (", why_not, ")"));
  }
  return absl::OkStatus();
}

absl::Status CudaSegmentationModel::Impl::ConvBiasPool(
    int i, int n, const float* in, int in_channels, int in_len, float* pooled) {
  return kernels::LaunchConv1dMaxPool3({.x = in,
                                        .weights = conv1d_weights[i - 1].f32(),
                                        .bias = conv_bias[i - 1].f32(),
                                        .y = pooled,
                                        .batch = n,
                                        .in_channels = in_channels,
                                        .len = in_len},
                                       ctx->stream());
}

absl::Status CudaSegmentationModel::Impl::Enqueue(int n) {
  cudaStream_t stream = ctx->stream();
  // Waveform InstanceNorm (no activation).
  RETURN_IF_ERROR(kernels::LaunchInstanceNorm({.x = audio,
                                               .gamma = wav_norm.gamma.f32(),
                                               .beta = wav_norm.beta.f32(),
                                               .out = normed,
                                               .batch = n,
                                               .channels = 1,
                                               .len = kWindowSamples},
                                              stream));
  // Stage 0: sinc conv (stride 10) → |.| → max-pool 3 → InstanceNorm →
  // LeakyReLU.
  RETURN_IF_ERROR(
      kernels::LaunchSincConvAbsPool({.x = normed,
                                      .filters = sinc_filters.f32(),
                                      .y = p0,
                                      .batch = n,
                                      .len = kWindowSamples,
                                      .taps = kSincKernel,
                                      .stride = kSincStride,
                                      .symmetric_halves = sinc_symmetric},
                                     stream));
  RETURN_IF_ERROR(kernels::LaunchInstanceNorm({.x = p0,
                                               .gamma = norm[0].gamma.f32(),
                                               .beta = norm[0].beta.f32(),
                                               .out = p0,
                                               .batch = n,
                                               .channels = kSinc,
                                               .len = kP0,
                                               .leaky = true,
                                               .slope = kSlope},
                                              stream));
  // Stage 1: conv 80→60 (+bias) → max-pool → InstanceNorm → LeakyReLU.
  RETURN_IF_ERROR(ConvBiasPool(1, n, p0, kSinc, kP0, p1));
  RETURN_IF_ERROR(kernels::LaunchInstanceNorm({.x = p1,
                                               .gamma = norm[1].gamma.f32(),
                                               .beta = norm[1].beta.f32(),
                                               .out = p1,
                                               .batch = n,
                                               .channels = kConv,
                                               .len = kP1,
                                               .leaky = true,
                                               .slope = kSlope},
                                              stream));
  // Stage 2, written as (batch, frame, feature) for the LSTM.
  RETURN_IF_ERROR(ConvBiasPool(2, n, p1, kConv, kP1, pooled2));
  RETURN_IF_ERROR(kernels::LaunchInstanceNorm({.x = pooled2,
                                               .gamma = norm[2].gamma.f32(),
                                               .beta = norm[2].beta.f32(),
                                               .out = seq,
                                               .batch = n,
                                               .channels = kConv,
                                               .len = kP2,
                                               .leaky = true,
                                               .slope = kSlope,
                                               .transpose_out = true},
                                              stream));
  // BiLSTM: gates = X·W_ihᵀ + (b_ih + b_hh) for all steps, then the recurrence.
  const int64_t rows = int64_t{n} * kP2;
  const float* x = seq;
  for (int l = 0; l < kLayers; ++l) {
    RETURN_IF_ERROR(lstm[l].input_projection->Forward(x, rows, gates));
    float* hout = h[l];
    if (lstm_cluster[n]) {
      RETURN_IF_ERROR(kernels::LaunchLstmClusterRecurrence(
          {.gates_in = gates,
           .w_hh_t = lstm[l].w_hh_t.f32(),
           .out = hout,
           .batch = n,
           .steps = kP2,
           .group = lstm_group[n],
           .device_share = harness.lstm_device_share},
          stream));
    } else {
      RETURN_IF_ERROR(
          kernels::LaunchLstmRecurrence({.gates_in = gates,
                                         .w_hh_t = lstm[l].w_hh_t.f32(),
                                         .out = hout,
                                         .batch = n,
                                         .steps = kP2},
                                        stream));
    }
    x = hout;
  }
  // Linear head.
  RETURN_IF_ERROR(linear[0]->Forward(x, rows, lin[0]));
  RETURN_IF_ERROR(
      kernels::LaunchLeakyRelu(lin[0], rows * kHidden, kSlope, stream));
  RETURN_IF_ERROR(linear[1]->Forward(lin[0], rows, lin[1]));
  RETURN_IF_ERROR(
      kernels::LaunchLeakyRelu(lin[1], rows * kHidden, kSlope, stream));
  RETURN_IF_ERROR(classifier->Forward(lin[1], rows, logits));
  return kernels::LaunchLogSoftmax(logits, out, rows, kPowersetClasses, stream);
}

CudaSegmentationModel::CudaSegmentationModel(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
CudaSegmentationModel::~CudaSegmentationModel() = default;
double CudaSegmentationModel::device_seconds() const {
  return impl_->busy.seconds();
}
int CudaSegmentationModel::graphs() const { return impl_->graphs->size(); }
const std::string& CudaSegmentationModel::lstm_selection() const {
  return impl_->lstm_selection;
}
const SegmentationActivationLayout& CudaSegmentationModel::activation_layout()
    const {
  return impl_->layout;
}

absl::StatusOr<std::unique_ptr<CudaSegmentationModel>>
CudaSegmentationModel::Create(const SafetensorsFile& w,
                              std::shared_ptr<DeviceArena> arena_owner,
                              const CudaModelOptions& options,
                              const CudaHarnessOptions& harness) {
  DeviceArena* arena = arena_owner.get();
  if (arena == nullptr)
    return absl::InvalidArgumentError("CudaSegmentationModel: no arena");
  if (options.precision != "fp32") {
    return absl::InvalidArgumentError(
        absl::StrCat("the segmentation model runs in fp32 only, not '",
                     options.precision, "'"));
  }
  if (options.max_batch < 1) {
    return absl::InvalidArgumentError(
        "CudaSegmentationModel: max_batch must be >= 1");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->harness = harness;
  impl->arena_owner = std::move(arena_owner);
  impl->arena = arena;
  ASSIGN_OR_RETURN(impl->ctx,
                   CudaContext::Create(
                       arena, "segmentation", cuda::Precision::kFp32,
                       options.workspace_bytes, options.timed_conv_algorithms));
  CudaContext* ctx = impl->ctx.get();
  impl->graphs =
      std::make_unique<cuda::GraphCache>(ctx->stream(), arena, "segmentation");
  const std::string wo = "segmentation/weights";
  // A 1-D tensor of `length` values, shape-checked, onto the device.
  auto upload = [&](const std::string& name,
                    int64_t length) -> absl::StatusOr<DeviceBuffer> {
    ASSIGN_OR_RETURN(std::vector<float> v, ReadF32(w, name, {length}));
    return DeviceBuffer::FromHost(arena, v, wo);
  };

  ASSIGN_OR_RETURN(impl->wav_norm.gamma,
                   upload("sincnet.wav_norm1d.weight", 1));
  ASSIGN_OR_RETURN(impl->wav_norm.beta, upload("sincnet.wav_norm1d.bias", 1));
  for (int i = 0; i < 3; ++i) {
    const int c = i == 0 ? kSinc : kConv;
    ASSIGN_OR_RETURN(impl->norm[i].gamma,
                     upload(absl::StrCat("sincnet.norm1d.", i, ".weight"), c));
    ASSIGN_OR_RETURN(impl->norm[i].beta,
                     upload(absl::StrCat("sincnet.norm1d.", i, ".bias"), c));
  }
  {
    const std::string fb = "sincnet.conv1d.0.filterbank.";
    ASSIGN_OR_RETURN(std::vector<float> low,
                     ReadF32(w, fb + "low_hz_", {kSincBands, 1}));
    ASSIGN_OR_RETURN(std::vector<float> band,
                     ReadF32(w, fb + "band_hz_", {kSincBands, 1}));
    ASSIGN_OR_RETURN(std::vector<float> win,
                     ReadF32(w, fb + "window_", {kSincHalfKernel}));
    ASSIGN_OR_RETURN(std::vector<float> nn,
                     ReadF32(w, fb + "n_", {1, kSincHalfKernel}));
    ASSIGN_OR_RETURN(std::vector<float> filters,
                     ComputeSincFilters(low, band, win, nn));
    ASSIGN_OR_RETURN(impl->sinc_filters,
                     DeviceBuffer::FromHost(arena, filters, wo));
    impl->sinc_symmetric = kernels::HasSymmetricHalves(filters, kSincKernel);
  }
  for (int i = 1; i <= 2; ++i) {
    const int in = i == 1 ? kSinc : kConv;
    ASSIGN_OR_RETURN(std::vector<float> cw,
                     ReadF32(w, absl::StrCat("sincnet.conv1d.", i, ".weight"),
                             {kConv, in, kConvKernel}));
    ASSIGN_OR_RETURN(
        impl->conv1d_weights[i - 1],
        DeviceBuffer::FromHost(arena, kernels::Conv1dPoolWeights(cw, in), wo));
    ASSIGN_OR_RETURN(
        impl->conv_bias[i - 1],
        upload(absl::StrCat("sincnet.conv1d.", i, ".bias"), kConv));
  }
  constexpr int kG = kernels::kLstmGates;  // 512
  for (int l = 0; l < kLayers; ++l) {
    const int in = l == 0 ? kConv : 2 * kHidden;
    LstmLayer& layer = impl->lstm[l];
    layer.input = in;
    std::vector<float> w_ih(size_t{2} * kG * in), bias(2 * kG),
        w_hh_t(size_t{2} * kHidden * kG);
    for (int d = 0; d < 2; ++d) {
      const std::string sfx = absl::StrCat("_l", l, d == 0 ? "" : "_reverse");
      ASSIGN_OR_RETURN(std::vector<float> wi,
                       ReadF32(w, "lstm.weight_ih" + sfx, {kG, in}));
      ASSIGN_OR_RETURN(std::vector<float> wh,
                       ReadF32(w, "lstm.weight_hh" + sfx, {kG, kHidden}));
      ASSIGN_OR_RETURN(std::vector<float> bi,
                       ReadF32(w, "lstm.bias_ih" + sfx, {kG}));
      ASSIGN_OR_RETURN(std::vector<float> bh,
                       ReadF32(w, "lstm.bias_hh" + sfx, {kG}));
      std::copy(wi.begin(), wi.end(),
                w_ih.begin() + size_t{static_cast<size_t>(d)} * kG * in);
      for (int j = 0; j < kG; ++j) {
        bias[d * kG + j] = bi[j] + bh[j];
        for (int k = 0; k < kHidden; ++k) {
          w_hh_t[(size_t{static_cast<size_t>(d)} * kHidden + k) * kG + j] =
              wh[size_t{static_cast<size_t>(j)} * kHidden + k];
        }
      }
    }
    ASSIGN_OR_RETURN(layer.input_projection,
                     cuda::Linear::Create(ctx, in, 2 * kG, w_ih, bias, wo));
    ASSIGN_OR_RETURN(layer.w_hh_t, DeviceBuffer::FromHost(arena, w_hh_t, wo));
  }
  for (int i = 0; i < 2; ++i) {
    const int in = i == 0 ? 2 * kHidden : kHidden;
    ASSIGN_OR_RETURN(
        std::vector<float> lw,
        ReadF32(w, absl::StrCat("linear.", i, ".weight"), {kHidden, in}));
    ASSIGN_OR_RETURN(
        std::vector<float> lb,
        ReadF32(w, absl::StrCat("linear.", i, ".bias"), {kHidden}));
    ASSIGN_OR_RETURN(impl->linear[i],
                     cuda::Linear::Create(ctx, in, kHidden, lw, lb, wo));
  }
  {
    ASSIGN_OR_RETURN(
        std::vector<float> cw,
        ReadF32(w, "classifier.weight", {kPowersetClasses, kHidden}));
    ASSIGN_OR_RETURN(std::vector<float> cb,
                     ReadF32(w, "classifier.bias", {kPowersetClasses}));
    ASSIGN_OR_RETURN(
        impl->classifier,
        cuda::Linear::Create(ctx, kHidden, kPowersetClasses, cw, cb, wo));
  }

  // Activations for max_batch windows.
  const size_t bm = static_cast<size_t>(options.max_batch);
  ASSIGN_OR_RETURN(impl->layout,
                   SegmentationActivationLayout::Plan(
                       harness.segmentation_activations, options.max_batch));
  const SegmentationActivationLayout& layout = impl->layout;
  ASSIGN_OR_RETURN(impl->activations,
                   DeviceBuffer::Allocate(arena, layout.total_bytes(),
                                          "segmentation/activations"));
  char* const base = static_cast<char*>(impl->activations.data());
  auto at = [&](SegTensor t) {
    return layout.used(t) ? reinterpret_cast<float*>(base + layout.offset(t))
                          : nullptr;
  };
  impl->audio = at(SegTensor::kAudio);
  impl->normed = at(SegTensor::kNormed);
  impl->p0 = at(SegTensor::kPool0);
  impl->p1 = at(SegTensor::kPool1);
  impl->pooled2 = at(SegTensor::kPool2);
  impl->seq = at(SegTensor::kSeq);
  impl->gates = at(SegTensor::kGates);
  static_assert(kLayers == 4);
  impl->h[0] = at(SegTensor::kLstmOut0);
  impl->h[1] = at(SegTensor::kLstmOut1);
  impl->h[2] = at(SegTensor::kLstmOut2);
  impl->h[3] = at(SegTensor::kLstmOut3);
  impl->lin[0] = at(SegTensor::kLinear0);
  impl->lin[1] = at(SegTensor::kLinear1);
  impl->logits = at(SegTensor::kLogits);
  impl->out = at(SegTensor::kOut);
  if (impl->audio != static_cast<float*>(impl->activations.data()) ||
      impl->out != impl->audio) {
    return absl::InternalError(
        "CudaSegmentationModel: the layout must put the windows and the "
        "log-probabilities at the start of the buffer");
  }
  ASSIGN_OR_RETURN(impl->uploader,
                   cuda::WindowUploader::Create(arena, options.max_batch,
                                                "segmentation/windows",
                                                at(SegTensor::kStaging)));
  ASSIGN_OR_RETURN(impl->host_out,
                   cuda::PinnedBuffer::Allocate(bm * kP2 * kPowersetClasses,
                                                "log-probabilities"));
  RETURN_IF_ERROR(impl->ChooseLstmKernels());
  const std::string where =
      absl::StrCat("cuda:", arena->device(), " segmentation");
  ReportDiagnostic(where, impl->lstm_selection);
  ReportDiagnostic(
      where, absl::StrFormat("activations (%s layout): %.1f MiB for %d "
                             "windows (%.2f MiB per window)",
                             layout.mode(), layout.total_bytes() / 1048576.0,
                             options.max_batch,
                             layout.total_bytes() / 1048576.0 / bm));
  return std::unique_ptr<CudaSegmentationModel>(
      new CudaSegmentationModel(std::move(impl)));
}

absl::Status CudaSegmentationModel::Run(std::span<const float> windows,
                                        int batch, std::span<float> log_probs) {
  if (batch < 0 ||
      windows.size() != static_cast<size_t>(batch) * kWindowSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaSegmentationModel::Run: batch ", batch, " with ", windows.size(),
        " samples; expected batch × ", kWindowSamples));
  }
  const ContiguousWindowSpans contiguous(windows, 0, batch);
  return RunSpans(contiguous.spans(), log_probs);
}

absl::Status CudaSegmentationModel::RunSpans(const WindowSpans& spans,
                                             std::span<float> log_probs) {
  Impl& m = *impl_;
  const int batch = spans.batch();
  const size_t per_out = size_t{kFramesPerWindow} * kPowersetClasses;
  RETURN_IF_ERROR(ValidateWindowSpans(spans));
  if (log_probs.size() != static_cast<size_t>(batch) * per_out) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaSegmentationModel::Run: batch ", batch, " with ",
                     log_probs.size(), " outputs; expected batch × ", per_out));
  }
  if (batch == 0) return absl::OkStatus();
  RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice"));
  cudaStream_t stream = m.ctx->stream();
  for (int first = 0; first < batch; first += m.options.max_batch) {
    const int n = std::min(m.options.max_batch, batch - first);
    const size_t out_count = static_cast<size_t>(n) * per_out;
    RETURN_IF_ERROR(m.busy.Begin(stream));
    RETURN_IF_ERROR(m.uploader.Upload(spans, first, n, m.activations, stream));
    // Cooperative launches (kernels/cooperative_token.h): the GPU's token is
    // held from before the batch's graph is launched until its stream
    // synchronize, i.e. until the cluster grids have completed.
    kernels::CooperativeLaunchToken::Hold token;
    if (m.lstm_cluster[n]) {
      token = kernels::CooperativeLaunchToken::ForDevice(m.arena->device())
                  .Acquire();
    }
    RETURN_IF_ERROR(m.graphs->Run({n, 0}, m.options.use_cuda_graphs,
                                  [&] { return m.Enqueue(n); }));
    RETURN_IF_ERROR(cuda::DownloadAsync(m.activations, out_count, m.host_out,
                                        stream, "log-probabilities"));
    RETURN_IF_ERROR(m.busy.End(stream));
    RETURN_IF_ERROR(
        CudaStatus(cudaStreamSynchronize(stream), "segmentation forward"));
    token.Release();
    RETURN_IF_ERROR(m.busy.Accumulate());
    std::memcpy(log_probs.data() + static_cast<size_t>(first) * per_out,
                m.host_out.data(), out_count * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
