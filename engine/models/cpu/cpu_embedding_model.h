// WeSpeaker ResNet34 as pyannote wraps it (../shared/specs/models.md §3–§4)
// on the CPU with oneDNN, float32: Kaldi fbank (engine/models/fbank.h) →
// ResNet34 trunk (BatchNorm folded into the convolutions; ReLU and the
// residual sum as oneDNN post-ops, blocked layouts chosen by oneDNN) → TSTP
// weighted statistics pooling → seg_1 linear.
//
// The fbank and the trunk run once per window; pooling runs once per mask
// (pyannote runs the whole network once per (window, speaker); the results
// agree up to float reordering, models.md §4). Mask weights are resampled
// from 589 segmentation frames to the 125 trunk frames with PyTorch's
// nearest rule. Pooling statistics are accumulated in double. seg_1 runs
// window by window at one window's row count (ADR 0083); the trunk runs the
// run's windows together (its convolutions gave the same bits at every run
// size on the AVX-512 and AVX2 machines seen, cpu_embedding_model_test).
// A batch runs in runs of at most CpuModelOptions::max_windows_per_run
// windows, each run size with its own cached plan and activations.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_CPU_EMBEDDING_MODEL_H_
#define DIARIZATION_ENGINE_MODELS_CPU_CPU_EMBEDDING_MODEL_H_

#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/cpu/cpu_options.h"
#include "engine/models/fbank.h"
#include "engine/models/format/model_specs.h"
#include "engine/models/format/safetensors.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models {

inline constexpr int kFbankFrames = FbankFrames(kWindowSamples);  // 998
// Time frames after layer4: three stride-2 stages, each ceil(n / 2).
inline constexpr int kTrunkFrames = (kFbankFrames + 7) / 8;  // 125
inline constexpr int kTrunkFeatures =
    ResNet34HyperParameters::kStatsDim / 2;  // 256 channels × 10 mel rows
inline constexpr int kStatsDim = ResNet34HyperParameters::kStatsDim;

// Index of the segmentation frame feeding trunk frame j (0..124):
// F.interpolate(mode="nearest") from 589 to 125 in float32.
int NearestMaskFrame(int j);

class CpuEmbeddingModel : public EmbeddingModel {
 public:
  static absl::StatusOr<std::unique_ptr<CpuEmbeddingModel>> Create(
      const SafetensorsFile& weights, const CpuModelOptions& options);
  ~CpuEmbeddingModel() override;

  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override;
  std::string precision() const override { return "fp32"; }

 private:
  struct Weights;
  struct TrunkPlan;
  struct HeadPlan;
  CpuEmbeddingModel();
  absl::StatusOr<TrunkPlan*> GetTrunkPlan(int batch);
  absl::StatusOr<HeadPlan*> GetHeadPlan(int rows);
  // Run for at most options_.max_windows_per_run windows (shapes checked).
  absl::Status RunChunk(std::span<const float> windows, int batch,
                        std::span<const float> masks, int masks_per_window,
                        std::span<float> embeddings);

  CpuModelOptions options_;
  std::unique_ptr<Fbank> fbank_;
  std::unique_ptr<Weights> weights_;
  std::map<int, std::unique_ptr<TrunkPlan>> trunk_plans_;
  std::map<int, std::unique_ptr<HeadPlan>> head_plans_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_CPU_EMBEDDING_MODEL_H_
