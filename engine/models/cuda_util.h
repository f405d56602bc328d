// Shared pieces of the CUDA backend: status conversion for CUDA, cuBLAS and
// cuDNN; arena-backed device buffers; a per-model execution context (stream,
// cuBLAS and cuDNN handles, one workspace, all memory from the device
// arena); a cuDNN convolution layer; and the row-major linear layer as a
// cuBLAS GEMM.
//
// Precision (DESIGN.md): "fp32" runs cuBLAS in pedantic FP32 and cuDNN
// convolutions with FMA-only kernels; "tf32" lets both use TF32 tensor cores;
// "mixed" (embedding only, opt-in under a gate, docs/benchmarks.md) runs the
// ResNet convolutions on FP16 tensors with FP32 accumulation (Conv2d::Shape::
// half) and everything else as "tf32".
// Convolution algorithms come from cuDNN's heuristics (not timing, so the
// choice is reproducible) and must be deterministic.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_UTIL_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/safetensors.h"
#include "engine/runtime/device_arena.h"

namespace diarization::models::cuda {

absl::Status CudaStatus(cudaError_t err, const std::string& what);
absl::Status CublasStatus(cublasStatus_t st, const std::string& what);
absl::Status CudnnStatus(cudnnStatus_t st, const std::string& what);

enum class Precision { kFp32, kTf32, kMixed };
absl::StatusOr<Precision> ParsePrecision(const std::string& name);
std::string PrecisionName(Precision p);

// One allocation from the arena, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(runtime::DeviceArena* arena,
                                               size_t bytes,
                                               const std::string& owner);
  // Allocates and copies `host` in (synchronously).
  static absl::StatusOr<DeviceBuffer> FromHost(runtime::DeviceArena* arena,
                                               std::span<const float> host,
                                               const std::string& owner);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  float* f32() const { return static_cast<float*>(ptr_); }
  double* f64() const { return static_cast<double*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  runtime::DeviceArena* arena_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host floats (cudaHostAlloc), freed on destruction: the staging
// area that makes host<->device copies asynchronous and capturable.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static absl::StatusOr<PinnedBuffer> Allocate(size_t floats,
                                               const std::string& what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

// Copies `count` floats from `src` into `staging`, then enqueues the copy from
// `staging` to `device` on `stream`. `what` names the data in errors.
absl::Status UploadStaged(const float* src, size_t count,
                          const PinnedBuffer& staging,
                          const DeviceBuffer& device, cudaStream_t stream,
                          const std::string& what);

// Enqueues the copy of `count` floats from `device` to `staging` on `stream`;
// they are in `staging` once the stream is synchronised.
absl::Status DownloadAsync(const DeviceBuffer& device, size_t count,
                           const PinnedBuffer& staging, cudaStream_t stream,
                           const std::string& what);

// Stream + library handles + workspace for one model on one device.
class CudaContext {
 public:
  // `owner` prefixes the ledger entries ("embedding/..."). The handles'
  // internal device memory (which cannot come from the arena) is measured
  // with cudaMemGetInfo and booked as external.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(
      runtime::DeviceArena* arena, const std::string& owner,
      Precision precision, size_t workspace_bytes,
      bool timed_conv_algorithms = false);
  ~CudaContext();

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  void* workspace() const { return workspace_.data(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }
  runtime::DeviceArena* arena() const { return arena_; }
  Precision precision() const { return precision_; }
  bool timed_conv_algorithms() const { return timed_conv_algorithms_; }
  const std::string& owner() const { return owner_; }

 private:
  CudaContext() = default;
  runtime::DeviceArena* arena_ = nullptr;
  std::string owner_;
  Precision precision_ = Precision::kFp32;
  bool timed_conv_algorithms_ = false;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer cublas_workspace_;
};

// Conv2d without bias (float32), weights resident in the arena. Tensors are
// NCHW, or NHWC when `channels_last` (cuDNN's tensor-core kernels work on
// channels-last data; NCHW makes them transpose around every convolution).
// Weights are always given in torch's (out, in, kh, kw) order.
class Conv2d {
 public:
  struct Shape {
    int out_channels, in_channels, kernel_h, kernel_w;
    int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    bool channels_last = false;
    // x, y, z, the weights and the bias in FP16 (IEEE half), accumulation
    // in FP32 (cuDNN's pseudo-half configuration). Needs tensor-op math.
    bool half = false;
  };
  static absl::StatusOr<std::unique_ptr<Conv2d>> Create(
      CudaContext* ctx, const Shape& shape, std::span<const float> weights,
      const std::string& owner);
  ~Conv2d();
  int OutH(int h) const {
    return (h + 2 * shape_.pad_h - shape_.kernel_h) / shape_.stride_h + 1;
  }
  int OutW(int w) const {
    return (w + 2 * shape_.pad_w - shape_.kernel_w) / shape_.stride_w + 1;
  }
  // y (n, out_channels, OutH(h), OutW(w)) = conv(x (n, in_channels, h, w)),
  // or the NHWC equivalents.
  // Enqueued on the context's stream; capturable in a CUDA graph once the
  // shape has been seen (the algorithm is chosen on first use).
  // x and y are float, or __half with Shape::half.
  absl::Status Forward(const void* x, int n, int h, int w, void* y);
  // y = ReLU(conv(x) + bias[c] + z) in one cuDNN call
  // (cudnnConvolutionBiasActivationForward: the epilogue runs inside the
  // convolution kernel instead of as a pass over y). bias: (out_channels) on
  // the device; z: the residual, shaped like y, or null; z must not alias y.
  // The layer's weights must already hold any folded BatchNorm scale.
  // With Shape::half every tensor, the bias included, is __half.
  absl::Status ForwardBiasRelu(const void* x, int n, int h, int w,
                               const void* bias, const void* z, void* y);
  const Shape& shape() const { return shape_; }

 private:
  Conv2d() = default;
  struct Algo {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
  };
  absl::StatusOr<Algo> ChooseAlgo(int n, int h, int w, const void* x,
                                  void* y);
  absl::Status SetShapes(int n, int h, int w);
  // The descriptors set for (n, h, w) and that shape's algorithm (chosen on
  // first use).
  absl::StatusOr<Algo> Prepare(int n, int h, int w, const void* x, void* y);

  CudaContext* ctx_ = nullptr;
  Shape shape_{};
  DeviceBuffer weights_;
  cudnnTensorDescriptor_t x_desc_ = nullptr;
  cudnnTensorDescriptor_t y_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnTensorDescriptor_t bias_desc_ = nullptr;
  cudnnActivationDescriptor_t relu_desc_ = nullptr;
  std::map<std::tuple<int, int, int>, Algo> algos_;
};

// Y (rows, out) = X (rows, in) · Wᵀ + bias, row-major, W (out, in) resident.
class Linear {
 public:
  static absl::StatusOr<std::unique_ptr<Linear>> Create(
      CudaContext* ctx, int in, int out, std::span<const float> weight,
      std::span<const float> bias, const std::string& owner);
  absl::Status Forward(const float* x, int64_t rows, float* y);
  int in() const { return in_; }
  int out() const { return out_; }

 private:
  Linear() = default;
  CudaContext* ctx_ = nullptr;
  int in_ = 0, out_ = 0;
  DeviceBuffer weight_;
  DeviceBuffer bias_;
};

// IEEE half copies of `values` (round to nearest even), for FP16 weights
// and biases uploaded as raw bytes.
std::vector<uint16_t> ToHalf(std::span<const float> values);
// Allocates and copies `values` in as FP16 (synchronously).
absl::StatusOr<DeviceBuffer> HalfFromHost(runtime::DeviceArena* arena,
                                          std::span<const float> values,
                                          const std::string& owner);

// Host copy of a float32 tensor; InvalidArgument when it is missing, not
// F32, or does not hold `expected_elements` values.
absl::StatusOr<std::vector<float>> ReadTensor(const SafetensorsFile& file,
                                              const std::string& name,
                                              int64_t expected_elements);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_UTIL_H_
