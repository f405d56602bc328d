#include "engine/models/cuda/embedding/cuda_conv2d.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {

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
  std::unique_ptr<Conv2d> conv(new Conv2d());
  conv->ctx_ = ctx;
  conv->shape_ = shape;
  const cudnnTensorFormat_t format =
      shape.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t data = CUDNN_DATA_FLOAT;
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
  ASSIGN_OR_RETURN(conv->weights_,
                   DeviceBuffer::FromHost(ctx->arena(), host, owner));
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
  const cudnnDataType_t data = CUDNN_DATA_FLOAT;
  RETURN_IF_ERROR(
      CudnnStatus(cudnnSetTensor4dDescriptor(x_desc_, format, data, n,
                                             shape_.in_channels, h, w),
                  "cudnnSetTensor4dDescriptor(x)"));
  return CudnnStatus(
      cudnnSetTensor4dDescriptor(y_desc_, format, data, n, shape_.out_channels,
                                 OutH(h), OutW(w)),
      "cudnnSetTensor4dDescriptor(y)");
}

absl::StatusOr<Conv2d::Algo> Conv2d::Prepare(int n, int h, int w, const void* x,
                                             void* y) {
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
                              ctx_->workspace(), algo.workspace, &beta, y_desc_,
                              y),
      absl::StrCat("cudnnConvolutionForward (", shape_.out_channels, "x",
                   shape_.in_channels, "x", shape_.kernel_h, "x",
                   shape_.kernel_w, ")"));
}

absl::Status Conv2d::ForwardBiasRelu(const void* x, int n, int h, int w,
                                     const void* bias, const void* z, void* y) {
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
        cudnnSetTensor4dDescriptor(bias_desc_, format, CUDNN_DATA_FLOAT, 1,
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
          conv_desc_, algo.algo, ctx_->workspace(), algo.workspace, &alpha2,
          y_desc_, z != nullptr ? z : y, bias_desc_, bias, relu_desc_, y_desc_,
          y),
      absl::StrCat("cudnnConvolutionBiasActivationForward (",
                   shape_.out_channels, "x", shape_.in_channels, "x",
                   shape_.kernel_h, "x", shape_.kernel_w, ")"));
}

}  // namespace diarization::models::cuda
