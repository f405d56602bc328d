// PyanNet (segmentation-3.0) on the CPU with oneDNN, float32
// (../shared/specs/models.md §1): InstanceNorm on the waveform, SincNet
// (parametric sinc conv stride 10, |.|, max-pool 3, InstanceNorm, leaky
// ReLU; two conv 5 stages), 4-layer bidirectional LSTM 60→128, linear 256→128
// and 128→128 with leaky ReLU, classifier 128→7, log-softmax.
//
// Convolutions, the LSTM (oneDNN's lstm_forward, bidirectional_concat) and the
// linears (matmul with a leaky-ReLU post-op) are oneDNN primitives; pooling,
// InstanceNorm and log-softmax are element-wise loops (statistics in double).
// Every oneDNN primitive except the optional lstm_forward is built for one
// window's shapes and runs once per window (ADR 0083), so a window's
// log-probs do not depend on its batch-mates, bit for bit, on any CPU.
// Buffers are built once per run size and cached; a batch runs in runs of
// at most CpuModelOptions::max_windows_per_run windows (cpu_options.h).
#ifndef DIARIZATION_ENGINE_MODELS_CPU_CPU_SEGMENTATION_MODEL_H_
#define DIARIZATION_ENGINE_MODELS_CPU_CPU_SEGMENTATION_MODEL_H_

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/cpu/cpu_options.h"
#include "engine/models/format/safetensors.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models {

class CpuSegmentationModel : public SegmentationModel {
 public:
  // Reads and checks every tensor it needs from `weights` (pyannote names);
  // the file may be closed afterwards.
  static absl::StatusOr<std::unique_ptr<CpuSegmentationModel>> Create(
      const SafetensorsFile& weights, const CpuModelOptions& options);
  ~CpuSegmentationModel() override;

  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<float> log_probs) override;
  std::string precision() const override { return "fp32"; }

 private:
  struct Weights;
  struct Plan;
  CpuSegmentationModel();
  absl::StatusOr<Plan*> GetPlan(int batch);
  // Run for at most options_.max_windows_per_run windows (shapes checked).
  absl::Status RunChunk(std::span<const float> windows, int batch,
                        std::span<float> log_probs);

  CpuModelOptions options_;
  std::unique_ptr<Weights> weights_;
  std::map<int, std::unique_ptr<Plan>> plans_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_CPU_SEGMENTATION_MODEL_H_
