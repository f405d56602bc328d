// WeSpeaker ResNet34 (pyannote's WeSpeakerResNet34 wrapper) on the GPU
// (../shared/specs/models.md §3-4): kaldi fbank on the device (kernels/fbank
// around a float64 FFT, cuda_fft.h), the ResNet trunk as cuDNN convolutions
// with eval BatchNorm (+ residual, ReLU) in one epilogue kernel,
// mask-weighted statistics pooling (kernels/stats_pool) and seg_1 as a
// cuBLASLt GEMM with its bias (cuda_linear.h).
//
// The trunk runs once per window and pools once per mask. Precision: "fp32"
// (pedantic cuBLAS, FMA-only cuDNN kernels) or "tf32" (tensor cores for the
// convolutions and seg_1; the fbank stays FP32/FP64). All device memory comes
// from the arena; one CUDA graph is captured per (windows, masks) shape.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_MODEL_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_MODEL_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_options.h"
#include "engine/models/cuda/device_arena.h"
#include "engine/models/format/safetensors.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models {

class CudaEmbeddingModel : public EmbeddingModel {
 public:
  // Reads the 218 ResNet34 tensors (pyannote names) from `weights` and puts
  // them on the arena's device; the file may be closed afterwards. The model
  // keeps the arena alive.
  static absl::StatusOr<std::unique_ptr<CudaEmbeddingModel>> Create(
      const SafetensorsFile& weights, std::shared_ptr<DeviceArena> arena,
      const CudaModelOptions& options, const CudaHarnessOptions& harness = {});
  ~CudaEmbeddingModel() override;

  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override;
  // Uploads each batch's covering audio once (cuda_window_upload.h).
  absl::Status RunSpans(const WindowSpans& spans, std::span<const float> masks,
                        int masks_per_window,
                        std::span<float> embeddings) override;
  // Pipelined (model_interfaces.h): StartSpans enqueues the batch and
  // returns; FinishSpans waits for that batch's own event, not the stream,
  // so the next batch keeps the GPU busy meanwhile.
  absl::Status StartSpans(const WindowSpans& spans,
                          std::span<const float> masks, int masks_per_window,
                          std::span<float> embeddings) override;
  absl::Status FinishSpans() override;
  bool pipelined() const override;
  std::string precision() const override;

  // The fbank stage alone (eager, no graph): fbank is batch × 998 × 80,
  // (window, frame, mel) as engine/models/fbank.h writes it. For tests and
  // the benchmark's stage times.
  absl::Status ComputeFbank(std::span<const float> windows, int batch,
                            std::span<float> fbank);

  // Number of CUDA graphs captured so far (one per batch shape).
  int graphs() const;
  // conv_api "graph": one line per trunk convolution and input
  // shape seen so far, naming the cuDNN graph engine it runs (and its timed
  // milliseconds) or why it stayed on the legacy call. Empty on "legacy".
  std::vector<std::string> conv_engines() const;
  // Whether layer1 runs on kernels/conv3x3_c32 (CudaModelOptions::
  // layer1_conv_kernel on a trunk and GPU that allow it), on either API.
  bool layer1_kernel() const;
  // Device time of all batches so far (CUDA events around each batch:
  // uploads, kernels, download), for the benchmark's busy/wall ratio.
  double device_seconds() const;

 private:
  struct Impl;
  explicit CudaEmbeddingModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_MODEL_H_
