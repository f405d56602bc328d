// Loading at start-up: the model directory (verified against its manifest),
// the PLDA, and one engine Device per requested device, plus what GetInfo
// reports about the models.
#ifndef DIARIZATION_SERVER_BACKENDS_H_
#define DIARIZATION_SERVER_BACKENDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/models/model_dir.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/device.h"

namespace diarization::server {

struct BackendOptions {
  // "auto", "cpu", "cuda" (every GPU) or "cuda:0,1" (these GPUs).
  std::string device = "auto";
  // OpenMP threads of the CPU networks; 0 = all cores.
  int cpu_threads = 0;
  // CUDA embedding precision: "fp32" or "tf32".
  std::string cuda_embedding_precision = "tf32";  // ADR 0062
  // Largest batch the CUDA buffers are sized for (the engine's batch sizes).
  int cuda_max_batch = 32;
  // Pre-loaded pipelines per GPU (--pipelines_per_device, 1..8): each has
  // its own models, CUDA streams and device arena (its own budget), and the
  // engine runs each as a Device of its own, named "cuda:N" when there is
  // one per GPU and "cuda:N/p0", "cuda:N/p1", ... when there are more. The
  // pipelines of a GPU share its cooperative launch token
  // (kernels/cooperative_token.h). Ignored for the CPU device.
  int pipelines_per_device = 1;
  // The segmentation's BiLSTM recurrence kernel: "qualified" (per the
  // kernel qualification record), "cluster" or "resident"
  // (models::CudaModelOptions::lstm_kernel).
  std::string cuda_lstm_kernel = "qualified";
  // Hold the GPU's cooperative launch token around cluster-LSTM batches
  // (off only to measure its cost).
  bool cuda_cooperative_token = true;
};

// A parsed --device.
struct DeviceSpec {
  bool cpu = false;
  // Empty with all_cuda: every visible GPU.
  std::vector<int> cuda_ordinals;
  bool all_cuda = false;
};

// "cpu", "cuda", "cuda:N[,M...]"; "auto" resolves to cuda when the CUDA
// backend is linked and a GPU is visible, else cpu.
absl::StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& device);

struct LoadedModels {
  std::vector<runtime::Device> devices;
  std::shared_ptr<const pipeline::PldaModel> plda;
  std::vector<v1::ModelInfo> model_info;
  // Any model carries random weights (results are not diarization).
  bool random_weights = false;
};

absl::StatusOr<LoadedModels> LoadModels(const std::string& dir,
                                        const BackendOptions& options);

// GetInfo's description of the directory's models.
std::vector<v1::ModelInfo> DescribeModels(
    const models::ModelDirectorySummary& summary);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_BACKENDS_H_
