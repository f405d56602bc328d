// A 1×1 convolution with stride on NHWC tensors (the ResNet's downsampling
// shortcuts), without bias, as one strided-batched cuBLAS GEMM: a candidate
// of the graph path (cudnn_graph_conv.h) for the layers where cuDNN's
// engines are far from the memory bound (issue 11: layer3.0.shortcut at
// 12 TFLOP/s with a 245 MB workspace).
//
// Why it is one GEMM call: with x NHWC (n, h, w, c), the input pixels of
// output row (img, i) are x[img, i·sh, j·sw, :] for j < out_w, i.e. a
// column-major (c × out_w) matrix with leading dimension sw·c; output row
// (img, i) of y is W (k × c) times it, a column-major (k × out_w) matrix
// with leading dimension k. One batch entry per output row: entry
// b = img·out_h + i starts at b·(sh·w·c) in x exactly when h == sh·out_h
// (each image ends where the next begins), and at b·(out_w·k) in y.
// Supported() checks that and the layer's shape.
//
// Precision: TF32 tensor-core math with FP32 accumulation on float32
// tensors (the "tf32" precision), or FP16 tensors with FP32 accumulation
// ("mixed"): the compute types the legacy and graph paths use.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_STRIDED_POINTWISE_CONV_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_STRIDED_POINTWISE_CONV_H_

#include "absl/status/status.h"
#include "engine/models/cuda_context.h"
#include "engine/models/cuda_conv2d.h"

namespace diarization::models::cuda {

// Whether `layer` on an (n, h, w) input is a 1×1, unpadded, channels-last
// convolution whose output rows tile the input as above.
bool StridedPointwiseConvSupported(const Conv2d& layer, int h, int w);

// y = conv(x, layer's filter) for a supported shape, enqueued on the
// context's stream (capturable); float32 tensors, or FP16 with
// Shape::half. The filter is the layer's own (channels-last (k, 1, 1, c),
// i.e. row-major k × c).
absl::Status LaunchStridedPointwiseConv(CudaContext* ctx, const Conv2d& layer,
                                        const void* x, int n, int h, int w,
                                        void* y);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_STRIDED_POINTWISE_CONV_H_
