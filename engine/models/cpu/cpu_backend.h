// The CPU backend: both networks built from a model directory, float32 on
// oneDNN with OpenMP threads.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_CPU_BACKEND_H_
#define DIARIZATION_ENGINE_MODELS_CPU_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/models/cpu/cpu_options.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/model_interfaces.h"

namespace diarization::models {

struct CpuBackendOptions {
  // OpenMP threads per network run; 0 = all cores (or OMP_NUM_THREADS).
  int threads = 0;
  // The segmentation LSTM implementation (both are tested).
  CpuLstmImpl lstm = CpuLstmImpl::kProjectionRecurrence;
};

struct CpuBackend {
  std::unique_ptr<SegmentationModel> segmentation;
  std::unique_ptr<EmbeddingModel> embedding;
  // For logs and GetInfo, e.g. "cpu (oneDNN 2.6.3, 2 threads, fp32)".
  std::string description;
  std::string precision = "fp32";
};

// Builds both networks from the directory's safetensors files (already
// validated by ModelDirectory::Open). Errors: those of the weight readers
// (NotFound / InvalidArgument naming the tensor) or Internal from oneDNN.
absl::StatusOr<CpuBackend> CreateCpuBackend(const ModelDirectory& dir,
                                            const CpuBackendOptions& options);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_CPU_BACKEND_H_
