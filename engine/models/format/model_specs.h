// The tensors of the two networks, exactly as pyannote.audio's modules name
// them in their state_dict (../shared/specs/models.md §1, §4, §5):
// PyanNet with segmentation-3.0's hyper-parameters and WeSpeakerResNet34.
// A model directory's safetensors files must hold exactly these tensors; the
// CPU and CUDA backends read their weights by these names.
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_SPECS_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_SPECS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/shapes.h"
#include "engine/models/format/safetensors.h"

namespace diarization::models {

// segmentation-3.0 hyper-parameters (stored in its checkpoint; PyanNet's
// class defaults differ, e.g. num_layers=2).
struct PyanNetHyperParameters {
  static constexpr int kSincBands = 40;    // (low_hz_, band_hz_) pairs.
  static constexpr int kSincFilters = 80;  // 40 cos + 40 sin filters.
  static constexpr int kSincKernel = 251;
  static constexpr int kSincHalfKernel = 125;
  static constexpr int kSincStride = 10;
  static constexpr float kSincMinLowHz = 50.0f;
  static constexpr float kSincMinBandHz = 50.0f;
  static constexpr int kConvChannels = 60;  // sincnet.conv1d.{1,2}.
  static constexpr int kConvKernel = 5;
  static constexpr int kPoolKernel = 3;
  static constexpr int kLstmHidden = 128;
  static constexpr int kLstmLayers = 4;      // bidirectional, monolithic.
  static constexpr int kLinearHidden = 128;  // linear.0, linear.1.
  static constexpr int kLinearLayers = 2;
  static constexpr int kClasses = 7;  // powerset(3 speakers, max 2).
  static constexpr float kNormEps = 1e-5f;
  static constexpr float kLeakySlope = 0.01f;
};

// Sequence lengths along PyanNet's SincNet for `samples` input samples
// (models.md §1.2): conv (stride kSincStride), max-pool kPoolKernel, twice
// conv kConvKernel + pool; pool2 is the frame count.
struct PyanNetLengths {
  int conv0, pool0, conv1, pool1, conv2, pool2;
};
constexpr PyanNetLengths PyanNetSincNetLengths(int samples) {
  using HP = PyanNetHyperParameters;
  PyanNetLengths l{};
  l.conv0 = (samples - HP::kSincKernel) / HP::kSincStride + 1;
  l.pool0 = l.conv0 / HP::kPoolKernel;
  l.conv1 = l.pool0 - (HP::kConvKernel - 1);
  l.pool1 = l.conv1 / HP::kPoolKernel;
  l.conv2 = l.pool1 - (HP::kConvKernel - 1);
  l.pool2 = l.conv2 / HP::kPoolKernel;
  return l;
}

// The shapes (engine/common/shapes.h) follow from the hyper-parameters.
static_assert(PyanNetSincNetLengths(kWindowSamples).pool2 == kFramesPerWindow);
static_assert(PyanNetHyperParameters::kSincStride *
                  PyanNetHyperParameters::kPoolKernel *
                  PyanNetHyperParameters::kPoolKernel *
                  PyanNetHyperParameters::kPoolKernel ==
              kFrameStepSamples);
// Input samples that one frame sees (pyannote's receptive field): back
// from one output frame through pool2, conv2, pool1, conv1, pool0 and the
// SincNet convolution.
constexpr int PyanNetReceptiveFieldSamples() {
  using HP = PyanNetHyperParameters;
  int r = 1;
  for (int pool = 0; pool < 3; ++pool) {
    r = (r - 1) * HP::kPoolKernel + HP::kPoolKernel;  // stride = kernel
    if (pool < 2) r += HP::kConvKernel - 1;           // the conv below it
  }
  return (r - 1) * HP::kSincStride + HP::kSincKernel;
}
static_assert(PyanNetReceptiveFieldSamples() == kFrameDurationSamples);
static_assert(PyanNetHyperParameters::kClasses == kPowersetClasses);
static_assert(PyanNetHyperParameters::kSincFilters ==
              2 * PyanNetHyperParameters::kSincBands);
static_assert(PyanNetHyperParameters::kSincHalfKernel ==
              PyanNetHyperParameters::kSincKernel / 2);

// WeSpeaker ResNet34 as pyannote wraps it (prefix "resnet.").
struct ResNet34HyperParameters {
  static constexpr int kFeatDim = 80;  // fbank mel bins.
  static constexpr int kBaseChannels = 32;
  static constexpr std::array<int, 4> kBlocks = {3, 4, 6, 3};
  static constexpr std::array<int, 4> kChannels = {32, 64, 128, 256};
  static constexpr int kStatsDim = 5120;  // 2 × 256 channels × 10 freq rows.
  static constexpr int kEmbedDim = 256;
  static constexpr float kBatchNormEps = 1e-5f;
};

static_assert(ResNet34HyperParameters::kFeatDim == kFbankMelBins);
static_assert(ResNet34HyperParameters::kEmbedDim == kEmbeddingDim);
// Statistics pooling: mean and std of the last stage's channels × the mel
// rows left after three stride-2 stages.
static_assert(ResNet34HyperParameters::kStatsDim ==
              2 * ResNet34HyperParameters::kChannels[3] *
                  (ResNet34HyperParameters::kFeatDim / 8));

// The 54 state_dict tensors of PyanNet (segmentation-3.0), in state_dict
// order. Includes the two SincNet buffers window_ and n_.
const std::vector<TensorSpec>& PyanNetTensorSpecs();

// The 218 state_dict tensors of WeSpeakerResNet34, in state_dict order.
// Includes BatchNorm running_mean/running_var (F32) and num_batches_tracked
// (I64 scalar, unused at inference).
const std::vector<TensorSpec>& ResNet34TensorSpecs();

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_SPECS_H_
