#include "engine/models/format/model_specs.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace diarization::models {
namespace {

TensorSpec F32(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), DType::kF32, std::move(shape)};
}

std::vector<TensorSpec> BuildPyanNet() {
  using H = PyanNetHyperParameters;
  std::vector<TensorSpec> s;
  s.push_back(F32("sincnet.wav_norm1d.weight", {1}));
  s.push_back(F32("sincnet.wav_norm1d.bias", {1}));
  const std::string fb = "sincnet.conv1d.0.filterbank.";
  s.push_back(F32(fb + "low_hz_", {H::kSincBands, 1}));
  s.push_back(F32(fb + "band_hz_", {H::kSincBands, 1}));
  s.push_back(F32(fb + "window_", {H::kSincHalfKernel}));
  s.push_back(F32(fb + "n_", {1, H::kSincHalfKernel}));
  s.push_back(F32("sincnet.conv1d.1.weight",
                  {H::kConvChannels, H::kSincFilters, H::kConvKernel}));
  s.push_back(F32("sincnet.conv1d.1.bias", {H::kConvChannels}));
  s.push_back(F32("sincnet.conv1d.2.weight",
                  {H::kConvChannels, H::kConvChannels, H::kConvKernel}));
  s.push_back(F32("sincnet.conv1d.2.bias", {H::kConvChannels}));
  const int norm_channels[3] = {H::kSincFilters, H::kConvChannels,
                                H::kConvChannels};
  for (int i = 0; i < 3; ++i) {
    s.push_back(
        F32(absl::StrCat("sincnet.norm1d.", i, ".weight"), {norm_channels[i]}));
    s.push_back(
        F32(absl::StrCat("sincnet.norm1d.", i, ".bias"), {norm_channels[i]}));
  }
  const int gates = 4 * H::kLstmHidden;
  for (int layer = 0; layer < H::kLstmLayers; ++layer) {
    const int input = layer == 0 ? H::kConvChannels : 2 * H::kLstmHidden;
    for (const char* suffix : {"", "_reverse"}) {
      const std::string l = absl::StrCat("_l", layer, suffix);
      s.push_back(F32("lstm.weight_ih" + l, {gates, input}));
      s.push_back(F32("lstm.weight_hh" + l, {gates, H::kLstmHidden}));
      s.push_back(F32("lstm.bias_ih" + l, {gates}));
      s.push_back(F32("lstm.bias_hh" + l, {gates}));
    }
  }
  for (int i = 0; i < H::kLinearLayers; ++i) {
    const int input = i == 0 ? 2 * H::kLstmHidden : H::kLinearHidden;
    s.push_back(
        F32(absl::StrCat("linear.", i, ".weight"), {H::kLinearHidden, input}));
    s.push_back(F32(absl::StrCat("linear.", i, ".bias"), {H::kLinearHidden}));
  }
  s.push_back(F32("classifier.weight", {H::kClasses, H::kLinearHidden}));
  s.push_back(F32("classifier.bias", {H::kClasses}));
  return s;
}

void AddBatchNorm(const std::string& prefix, int channels,
                  std::vector<TensorSpec>& s) {
  s.push_back(F32(prefix + ".weight", {channels}));
  s.push_back(F32(prefix + ".bias", {channels}));
  s.push_back(F32(prefix + ".running_mean", {channels}));
  s.push_back(F32(prefix + ".running_var", {channels}));
  s.push_back({prefix + ".num_batches_tracked", DType::kI64, {}});
}

std::vector<TensorSpec> BuildResNet34() {
  using H = ResNet34HyperParameters;
  std::vector<TensorSpec> s;
  s.push_back(F32("resnet.conv1.weight", {H::kBaseChannels, 1, 3, 3}));
  AddBatchNorm("resnet.bn1", H::kBaseChannels, s);
  int in_planes = H::kBaseChannels;
  for (int layer = 0; layer < 4; ++layer) {
    const int planes = H::kChannels[layer];
    for (int block = 0; block < H::kBlocks[layer]; ++block) {
      const std::string p = absl::StrCat("resnet.layer", layer + 1, ".", block);
      s.push_back(F32(p + ".conv1.weight", {planes, in_planes, 3, 3}));
      AddBatchNorm(p + ".bn1", planes, s);
      s.push_back(F32(p + ".conv2.weight", {planes, planes, 3, 3}));
      AddBatchNorm(p + ".bn2", planes, s);
      // Block 0 of layers 2-4 has stride 2 and more channels: a 1x1 conv +
      // BatchNorm shortcut.
      if (in_planes != planes) {
        s.push_back(F32(p + ".shortcut.0.weight", {planes, in_planes, 1, 1}));
        AddBatchNorm(p + ".shortcut.1", planes, s);
      }
      in_planes = planes;
    }
  }
  s.push_back(F32("resnet.seg_1.weight", {H::kEmbedDim, H::kStatsDim}));
  s.push_back(F32("resnet.seg_1.bias", {H::kEmbedDim}));
  return s;
}

}  // namespace

const std::vector<TensorSpec>& PyanNetTensorSpecs() {
  static const std::vector<TensorSpec>* specs =
      new std::vector<TensorSpec>(BuildPyanNet());
  return *specs;
}

const std::vector<TensorSpec>& ResNet34TensorSpecs() {
  static const std::vector<TensorSpec>* specs =
      new std::vector<TensorSpec>(BuildResNet34());
  return *specs;
}

}  // namespace diarization::models
