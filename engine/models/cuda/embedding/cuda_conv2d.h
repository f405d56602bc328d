// The cuDNN convolution layer of the CUDA backend (the embedding's ResNet,
// the segmentation's SincNet convolutions).
//
// Convolution algorithms come from cuDNN's heuristics (not timing, so the
// choice is reproducible; CudaContext::timed_conv_algorithms() times them
// instead) and must be deterministic.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_CONV2D_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_CONV2D_H_

#include <cudnn.h>

#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_context.h"

namespace diarization::models::cuda {

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
  absl::Status Forward(const void* x, int n, int h, int w, void* y);
  // y = ReLU(conv(x) + bias[c] + z) in one cuDNN call
  // (cudnnConvolutionBiasActivationForward: the epilogue runs inside the
  // convolution kernel instead of as a pass over y). bias: (out_channels) on
  // the device; z: the residual, shaped like y, or null; z must not alias y.
  // The layer's weights must already hold any folded BatchNorm scale.
  absl::Status ForwardBiasRelu(const void* x, int n, int h, int w,
                               const void* bias, const void* z, void* y);
  const Shape& shape() const { return shape_; }
  // The device filter, (out, in, kh, kw) or with channels_last (out, kh,
  // kw, in); for another API running the same layer (cudnn_graph_conv.h).
  const void* weights() const { return weights_.data(); }

 private:
  Conv2d() = default;
  struct Algo {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
  };
  absl::StatusOr<Algo> ChooseAlgo(int n, int h, int w, const void* x, void* y);
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

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_CONV2D_H_
