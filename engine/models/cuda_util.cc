#include "engine/models/cuda_util.h"

#include <cuda_fp16.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "kernels/nn_ops.h"

namespace diarization::models::cuda {

absl::Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

absl::Status CublasStatus(cublasStatus_t st, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cublasGetStatusString(st));
  if (st == CUBLAS_STATUS_ALLOC_FAILED)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

absl::Status CudnnStatus(cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(what, ": ", cudnnGetErrorString(st));
  if (st == CUDNN_STATUS_ALLOC_FAILED)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

absl::StatusOr<Precision> ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "tf32") return Precision::kTf32;
  if (name == "mixed") return Precision::kMixed;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision '", name, "' is not supported; use fp32, tf32 or mixed"));
}

std::string PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kMixed:
      return "mixed";
  }
  return "unknown";
}

std::vector<uint16_t> ToHalf(std::span<const float> values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const __half h = __float2half_rn(values[i]);
    std::memcpy(&out[i], &h, sizeof(uint16_t));
  }
  return out;
}

absl::StatusOr<DeviceBuffer> HalfFromHost(runtime::DeviceArena* arena,
                                          std::span<const float> values,
                                          const std::string& owner) {
  const std::vector<uint16_t> h = ToHalf(values);
  ASSIGN_OR_RETURN(DeviceBuffer b,
                   DeviceBuffer::Allocate(arena, h.size() * 2, owner));
  RETURN_IF_ERROR(CudaStatus(cudaMemcpy(b.data(), h.data(), h.size() * 2,
                                        cudaMemcpyHostToDevice),
                             absl::StrCat("copying ", owner, " (FP16)")));
  return b;
}

// --- DeviceBuffer -----------------------------------------------------------

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(runtime::DeviceArena* arena,
                                                    size_t bytes,
                                                    const std::string& owner) {
  DeviceBuffer b;
  ASSIGN_OR_RETURN(b.ptr_, arena->Allocate(bytes, owner));
  b.arena_ = arena;
  b.bytes_ = bytes;
  return b;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::FromHost(runtime::DeviceArena* arena,
                                                    std::span<const float> host,
                                                    const std::string& owner) {
  ASSIGN_OR_RETURN(DeviceBuffer b, Allocate(arena, host.size_bytes(), owner));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpy(b.ptr_, host.data(), host.size_bytes(),
                            cudaMemcpyHostToDevice),
                 absl::StrCat("copying ", owner, " to the device")));
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (arena_ != nullptr && ptr_ != nullptr) (void)arena_->Free(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept {
  *this = std::move(other);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (arena_ != nullptr && ptr_ != nullptr) (void)arena_->Free(ptr_);
    arena_ = std::exchange(other.arena_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// --- PinnedBuffer -----------------------------------------------------------

absl::StatusOr<PinnedBuffer> PinnedBuffer::Allocate(size_t floats,
                                                    const std::string& what) {
  PinnedBuffer b;
  RETURN_IF_ERROR(
      CudaStatus(cudaHostAlloc(reinterpret_cast<void**>(&b.data_),
                               floats * sizeof(float), cudaHostAllocDefault),
                 absl::StrCat("cudaHostAlloc (", floats * sizeof(float),
                              " bytes of pinned host memory for ", what, ")")));
  b.size_ = floats;
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept {
  *this = std::move(other);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::Status UploadStaged(const float* src, size_t count,
                          const PinnedBuffer& staging,
                          const DeviceBuffer& device, cudaStream_t stream,
                          const std::string& what) {
  if (count > staging.size() || count * sizeof(float) > device.bytes()) {
    return absl::InternalError(
        absl::StrCat("copying ", what, ": ", count,
                     " floats exceed the staging or device buffer"));
  }
  std::memcpy(staging.data(), src, count * sizeof(float));
  return CudaStatus(
      cudaMemcpyAsync(device.data(), staging.data(), count * sizeof(float),
                      cudaMemcpyHostToDevice, stream),
      absl::StrCat("copying ", what, " to the device"));
}

absl::Status DownloadAsync(const DeviceBuffer& device, size_t count,
                           const PinnedBuffer& staging, cudaStream_t stream,
                           const std::string& what) {
  if (count > staging.size() || count * sizeof(float) > device.bytes()) {
    return absl::InternalError(
        absl::StrCat("copying ", what, ": ", count,
                     " floats exceed the staging or device buffer"));
  }
  return CudaStatus(
      cudaMemcpyAsync(staging.data(), device.data(), count * sizeof(float),
                      cudaMemcpyDeviceToHost, stream),
      absl::StrCat("copying ", what, " from the device"));
}

// --- CudaContext ------------------------------------------------------------

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(
    runtime::DeviceArena* arena, const std::string& owner, Precision precision,
    size_t workspace_bytes, bool timed_conv_algorithms) {
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->arena_ = arena;
  ctx->owner_ = owner;
  ctx->precision_ = precision;
  ctx->timed_conv_algorithms_ = timed_conv_algorithms;
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(arena->device()), "cudaSetDevice"));
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking),
      "cudaStreamCreate"));
  size_t free_before = 0, free_after = 0, total = 0;
  RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo"));
  RETURN_IF_ERROR(CublasStatus(cublasCreate(&ctx->cublas_), "cublasCreate"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreate(&ctx->cudnn_), "cudnnCreate"));
  RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo"));
  // What the libraries took for themselves; booked so the ledger is whole.
  arena->RecordExternal(
      owner + "/library_handles",
      free_before > free_after ? free_before - free_after : 0);

  RETURN_IF_ERROR(CublasStatus(cublasSetStream(ctx->cublas_, ctx->stream_),
                               "cublasSetStream"));
  RETURN_IF_ERROR(
      CudnnStatus(cudnnSetStream(ctx->cudnn_, ctx->stream_), "cudnnSetStream"));
  RETURN_IF_ERROR(CublasStatus(
      cublasSetMathMode(ctx->cublas_, precision == Precision::kFp32
                                          ? CUBLAS_PEDANTIC_MATH
                                          : CUBLAS_TF32_TENSOR_OP_MATH),
      "cublasSetMathMode"));
  // cuBLAS gets its workspace from the arena (no hidden cudaMalloc, and
  // graph capture needs a fixed workspace).
  constexpr size_t kCublasWorkspace = size_t{32} << 20;
  ASSIGN_OR_RETURN(ctx->cublas_workspace_,
                   DeviceBuffer::Allocate(arena, kCublasWorkspace,
                                          owner + "/cublas_workspace"));
  RETURN_IF_ERROR(CublasStatus(
      cublasSetWorkspace(ctx->cublas_, ctx->cublas_workspace_.data(),
                         kCublasWorkspace),
      "cublasSetWorkspace"));
  if (workspace_bytes > 0) {
    ASSIGN_OR_RETURN(ctx->workspace_,
                     DeviceBuffer::Allocate(arena, workspace_bytes,
                                            owner + "/cudnn_workspace"));
  }
  return ctx;
}

CudaContext::~CudaContext() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

// --- Conv2d -----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Conv2d>> Conv2d::Create(
    CudaContext* ctx, const Shape& shape, std::span<const float> weights,
    const std::string& owner) {
  const size_t expected = static_cast<size_t>(shape.out_channels) *
                          shape.in_channels * shape.kernel_h * shape.kernel_w;
  if (weights.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conv2d ", owner, ": ", weights.size(),
                     " weights, expected ", expected));
  }
  if (shape.half && ctx->precision() == Precision::kFp32) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conv2d ", owner, ": FP16 tensors need tensor-op math, "
                     "not the fp32 precision"));
  }
  std::unique_ptr<Conv2d> conv(new Conv2d());
  conv->ctx_ = ctx;
  conv->shape_ = shape;
  const cudnnTensorFormat_t format =
      shape.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t data = shape.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  std::vector<float> t;
  std::span<const float> host = weights;
  if (shape.channels_last) {
    // (out, in, kh, kw) -> (out, kh, kw, in), cuDNN's NHWC filter layout.
    const int c = shape.in_channels, r = shape.kernel_h, q = shape.kernel_w;
    t.resize(weights.size());
    for (int k = 0; k < shape.out_channels; ++k)
      for (int ci = 0; ci < c; ++ci)
        for (int y = 0; y < r; ++y)
          for (int x = 0; x < q; ++x)
            t[((static_cast<size_t>(k) * r + y) * q + x) * c + ci] =
                weights[((static_cast<size_t>(k) * c + ci) * r + y) * q + x];
    host = t;
  }
  if (shape.half) {
    ASSIGN_OR_RETURN(conv->weights_, HalfFromHost(ctx->arena(), host, owner));
  } else {
    ASSIGN_OR_RETURN(conv->weights_,
                     DeviceBuffer::FromHost(ctx->arena(), host, owner));
  }
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateTensorDescriptor(&conv->x_desc_),
                              "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateTensorDescriptor(&conv->y_desc_),
                              "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateFilterDescriptor(&conv->w_desc_),
                              "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(
      CudnnStatus(cudnnCreateConvolutionDescriptor(&conv->conv_desc_),
                  "cudnnCreateConvolutionDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(
      cudnnSetFilter4dDescriptor(conv->w_desc_, data, format,
                                 shape.out_channels, shape.in_channels,
                                 shape.kernel_h, shape.kernel_w),
      "cudnnSetFilter4dDescriptor"));
  // The compute type stays FLOAT with FP16 data: FP32 accumulation.
  RETURN_IF_ERROR(CudnnStatus(
      cudnnSetConvolution2dDescriptor(
          conv->conv_desc_, shape.pad_h, shape.pad_w, shape.stride_h,
          shape.stride_w, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor"));
  RETURN_IF_ERROR(
      CudnnStatus(cudnnSetConvolutionMathType(
                      conv->conv_desc_, ctx->precision() == Precision::kFp32
                                            ? CUDNN_FMA_MATH
                                            : CUDNN_TENSOR_OP_MATH),
                  "cudnnSetConvolutionMathType"));
  return conv;
}

Conv2d::~Conv2d() {
  if (x_desc_) cudnnDestroyTensorDescriptor(x_desc_);
  if (y_desc_) cudnnDestroyTensorDescriptor(y_desc_);
  if (w_desc_) cudnnDestroyFilterDescriptor(w_desc_);
  if (conv_desc_) cudnnDestroyConvolutionDescriptor(conv_desc_);
  if (bias_desc_) cudnnDestroyTensorDescriptor(bias_desc_);
  if (relu_desc_) cudnnDestroyActivationDescriptor(relu_desc_);
}

absl::StatusOr<Conv2d::Algo> Conv2d::ChooseAlgo(int n, int h, int w,
                                                const void* x, void* y) {
  constexpr int kMaxAlgos = 16;
  cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
  int returned = 0;
  if (ctx_->timed_conv_algorithms()) {
    // Times every candidate on the device (writes y; the caller's run that
    // follows overwrites it). Results come sorted by time.
    RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(ctx_->stream()),
                               "cudaStreamSynchronize"));
    RETURN_IF_ERROR(
        CudnnStatus(cudnnFindConvolutionForwardAlgorithmEx(
                        ctx_->cudnn(), x_desc_, x, w_desc_, weights_.data(),
                        conv_desc_, y_desc_, y, kMaxAlgos, &returned, perf,
                        ctx_->workspace(), ctx_->workspace_bytes()),
                    "cudnnFindConvolutionForwardAlgorithmEx"));
  } else {
    RETURN_IF_ERROR(CudnnStatus(cudnnGetConvolutionForwardAlgorithm_v7(
                                    ctx_->cudnn(), x_desc_, w_desc_, conv_desc_,
                                    y_desc_, kMaxAlgos, &returned, perf),
                                "cudnnGetConvolutionForwardAlgorithm_v7"));
  }
  const bool fp32 = ctx_->precision() == Precision::kFp32;
  const cudnnMathType_t want = fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  std::string rejected;
  for (int i = 0; i < returned; ++i) {
    const auto& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    // FP32 must not fall back to tensor-op kernels; TF32 and mixed may use
    // either.
    const bool math_ok =
        !fp32 || p.mathType == want || p.mathType == CUDNN_DEFAULT_MATH;
    // FP32 parity (≤ 1e-5) rules out the transform-based algorithms, whose
    // rounding error is well above plain accumulation's.
    const bool transform =
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    if (!math_ok || (transform && fp32) ||
        p.determinism != CUDNN_DETERMINISTIC ||
        p.memory > ctx_->workspace_bytes()) {
      absl::StrAppend(&rejected, " algo ", static_cast<int>(p.algo), " (math ",
                      static_cast<int>(p.mathType), ", det ",
                      static_cast<int>(p.determinism), ", ws ", p.memory, ")");
      continue;
    }
    return Algo{p.algo, p.memory};
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "no deterministic cuDNN forward algorithm fits the ",
      ctx_->workspace_bytes(), "-byte workspace for conv ", shape_.out_channels,
      "x", shape_.in_channels, "x", shape_.kernel_h, "x", shape_.kernel_w,
      " on input ", n, "x", shape_.in_channels, "x", h, "x", w, ";",
      rejected.empty() ? " none offered" : rejected,
      ". Raise CudaBackendOptions::workspace_bytes."));
}

absl::Status Conv2d::SetShapes(int n, int h, int w) {
  const cudnnTensorFormat_t format =
      shape_.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t data =
      shape_.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  RETURN_IF_ERROR(CudnnStatus(cudnnSetTensor4dDescriptor(
                                  x_desc_, format, data, n,
                                  shape_.in_channels, h, w),
                              "cudnnSetTensor4dDescriptor(x)"));
  return CudnnStatus(
      cudnnSetTensor4dDescriptor(y_desc_, format, data, n,
                                 shape_.out_channels, OutH(h), OutW(w)),
      "cudnnSetTensor4dDescriptor(y)");
}

absl::StatusOr<Conv2d::Algo> Conv2d::Prepare(int n, int h, int w,
                                             const void* x, void* y) {
  RETURN_IF_ERROR(SetShapes(n, h, w));
  auto key = std::make_tuple(n, h, w);
  auto it = algos_.find(key);
  if (it == algos_.end()) {
    ASSIGN_OR_RETURN(Algo a, ChooseAlgo(n, h, w, x, y));
    it = algos_.emplace(key, a).first;
  }
  return it->second;
}

absl::Status Conv2d::Forward(const void* x, int n, int h, int w, void* y) {
  ASSIGN_OR_RETURN(const Algo algo, Prepare(n, h, w, x, y));
  const float alpha = 1.0f, beta = 0.0f;
  return CudnnStatus(
      cudnnConvolutionForward(ctx_->cudnn(), &alpha, x_desc_, x, w_desc_,
                              weights_.data(), conv_desc_, algo.algo,
                              ctx_->workspace(), algo.workspace, &beta,
                              y_desc_, y),
      absl::StrCat("cudnnConvolutionForward (", shape_.out_channels, "x",
                   shape_.in_channels, "x", shape_.kernel_h, "x",
                   shape_.kernel_w, ")"));
}

absl::Status Conv2d::ForwardBiasRelu(const void* x, int n, int h, int w,
                                     const void* bias, const void* z,
                                     void* y) {
  if (z != nullptr && z == y) {
    return absl::InternalError(
        "Conv2d::ForwardBiasRelu: the residual must not alias the output");
  }
  if (bias_desc_ == nullptr) {
    const cudnnTensorFormat_t format =
        shape_.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    RETURN_IF_ERROR(CudnnStatus(cudnnCreateTensorDescriptor(&bias_desc_),
                                "cudnnCreateTensorDescriptor(bias)"));
    RETURN_IF_ERROR(CudnnStatus(
        cudnnSetTensor4dDescriptor(
            bias_desc_, format,
            shape_.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, 1,
            shape_.out_channels, 1, 1),
        "cudnnSetTensor4dDescriptor(bias)"));
    RETURN_IF_ERROR(CudnnStatus(cudnnCreateActivationDescriptor(&relu_desc_),
                                "cudnnCreateActivationDescriptor"));
    RETURN_IF_ERROR(CudnnStatus(
        cudnnSetActivationDescriptor(relu_desc_, CUDNN_ACTIVATION_RELU,
                                     CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor"));
  }
  ASSIGN_OR_RETURN(const Algo algo, Prepare(n, h, w, x, y));
  // alpha2 = 0 without a residual: cuDNN then ignores z's values, and z may
  // be y (TensorFlow's fused convolution does the same).
  const float alpha1 = 1.0f, alpha2 = z != nullptr ? 1.0f : 0.0f;
  return CudnnStatus(
      cudnnConvolutionBiasActivationForward(
          ctx_->cudnn(), &alpha1, x_desc_, x, w_desc_, weights_.data(),
          conv_desc_, algo.algo, ctx_->workspace(),
          algo.workspace, &alpha2, y_desc_, z != nullptr ? z : y,
          bias_desc_, bias, relu_desc_, y_desc_, y),
      absl::StrCat("cudnnConvolutionBiasActivationForward (",
                   shape_.out_channels, "x", shape_.in_channels, "x",
                   shape_.kernel_h, "x", shape_.kernel_w, ")"));
}

// --- Linear -----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(
    CudaContext* ctx, int in, int out, std::span<const float> weight,
    std::span<const float> bias, const std::string& owner) {
  if (weight.size() != static_cast<size_t>(in) * out ||
      bias.size() != static_cast<size_t>(out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear ", owner, ": weight ", weight.size(), " / bias ",
                     bias.size(), " values, expected ", in * out, " / ", out));
  }
  std::unique_ptr<Linear> lin(new Linear());
  lin->ctx_ = ctx;
  lin->in_ = in;
  lin->out_ = out;
  ASSIGN_OR_RETURN(lin->weight_,
                   DeviceBuffer::FromHost(ctx->arena(), weight, owner));
  ASSIGN_OR_RETURN(lin->bias_,
                   DeviceBuffer::FromHost(ctx->arena(), bias, owner));
  return lin;
}

absl::Status Linear::Forward(const float* x, int64_t rows, float* y) {
  // Bias first, then Y += X·Wᵀ (beta = 1), as torch's addmm does.
  RETURN_IF_ERROR(
      kernels::LaunchBroadcastRows(bias_.f32(), y, rows, out_, ctx_->stream()));
  const float alpha = 1.0f, beta = 1.0f;
  // Column-major view: Yᵀ (out × rows) = W (out × in, stored as in × out) ᵀ ·
  // Xᵀ.
  return CublasStatus(
      cublasSgemm(ctx_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_,
                  static_cast<int>(rows), in_, &alpha, weight_.f32(), in_, x,
                  in_, &beta, y, out_),
      absl::StrCat("cublasSgemm (linear ", in_, "->", out_, ")"));
}

absl::StatusOr<std::vector<float>> ReadTensor(const SafetensorsFile& file,
                                              const std::string& name,
                                              int64_t expected_elements) {
  const TensorView* t = file.Find(name);
  if (t == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path(), ": tensor '", name, "' is missing"));
  }
  if (t->dtype != DType::kF32 || t->num_elements() != expected_elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path(), ": tensor '", name, "' must be F32 with ",
                     expected_elements, " elements, has ", t->num_elements()));
  }
  std::span<const float> v = t->f32();
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace diarization::models::cuda
