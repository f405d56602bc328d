// CudaEmbeddingModel::Create: the options' checks, the weights (BatchNorm
// folded into the convolutions) and the buffers (cuda_embedding_impl.h
// lists the files).
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/embedding/cuda_embedding_impl.h"
#include "engine/models/format/weights.h"
#include "kernels/conv3x3_c32.h"
#include "kernels/fbank.h"
#include "kernels/qualification.h"

namespace diarization::models {
namespace {

using cuda::Conv2d;
using cuda::CudaContext;
using cuda::CudaStatus;
using cuda::DeviceBuffer;
using cuda_embedding::Block;
using cuda_embedding::ConvBn;
using cuda_embedding::HP;
using cuda_embedding::kBnEps;
using cuda_embedding::kFrames;
using cuda_embedding::kMel;
using cuda_embedding::kStats;
using cuda_embedding::kStem;

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

}  // namespace diarization::models
