// PyanNet (segmentation-3.0) on the GPU, float32 (../shared/specs/models.md
// §1): waveform InstanceNorm, SincNet (the parametric sinc filters computed
// once at load by sincnet_filters.h, then three cuDNN convolutions, each
// followed by |.| (stage 0) / bias, max-pool 3 and InstanceNorm + LeakyReLU
// kernels), the 4-layer BiLSTM (input projections of all steps as one cuBLAS
// GEMM per layer, the recurrence in kernels/lstm or, for the batch sizes the
// kernel qualification record qualifies, kernels/lstm_cluster), linear
// 256→128→128 with LeakyReLU and the classifier as GEMMs, and log-softmax.
//
// Segmentation is always FP32 (DESIGN.md). All device memory comes from the
// arena; the activations are one buffer laid out by
// cuda_segmentation_layout.h; one CUDA graph is captured per batch size.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_MODEL_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_MODEL_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_options.h"
#include "engine/models/cuda/device_arena.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_layout.h"
#include "engine/models/format/safetensors.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models {

class CudaSegmentationModel : public SegmentationModel {
 public:
  // Reads the PyanNet tensors (pyannote names) from `weights`; the file may
  // be closed afterwards. options.precision must be "fp32". The model keeps the
  // arena alive.
  static absl::StatusOr<std::unique_ptr<CudaSegmentationModel>> Create(
      const SafetensorsFile& weights, std::shared_ptr<DeviceArena> arena,
      const CudaModelOptions& options, const CudaHarnessOptions& harness = {});
  ~CudaSegmentationModel() override;

  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<float> log_probs) override;
  // Uploads each batch's covering audio once (cuda_window_upload.h).
  absl::Status RunSpans(const WindowSpans& spans,
                        std::span<float> log_probs) override;
  std::string precision() const override { return "fp32"; }
  int graphs() const;
  // Device time of all batches so far (CUDA events around each batch:
  // uploads, kernels, download), for the benchmark's busy/wall ratio.
  double device_seconds() const;
  // Which BiLSTM recurrence kernel runs for which batch sizes, and why (one
  // line; options.lstm_kernel, kernels/qualification.h).
  const std::string& lstm_selection() const;
  // Where the activations live and what they take ("packed", or the
  // harness's reference layout, for options.max_batch windows).
  const SegmentationActivationLayout& activation_layout() const;

 private:
  struct Impl;
  explicit CudaSegmentationModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_SEGMENTATION_CUDA_SEGMENTATION_MODEL_H_
