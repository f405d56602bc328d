// The cuDNN frontend's operation graph of one GraphConv2d convolution and
// its epilogue (cudnn_graph_conv.h), with the heuristics' engines filtered by
// the project's numerical rules: what GraphConv2d builds and times its plans
// from. Private to the cudnn_graph_conv target; empty without the frontend's
// headers (tools/third_party/get_cudnn_frontend.sh).
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_CONV_OPERATION_GRAPH_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_CONV_OPERATION_GRAPH_H_

#if __has_include(<cudnn_frontend.h>)
#include <cudnn_frontend.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/models/cuda/embedding/cuda_conv2d.h"

namespace diarization::models::cuda::conv_graph {

namespace fe = cudnn_frontend;

// The uids of the graph's tensors (a call's variant pack names them).
inline constexpr int64_t kUidX = 1, kUidW = 2, kUidBias = 3, kUidZ = 4,
                         kUidY = 5;

// A frontend error as text.
std::string FeMessage(fe::error_t e);

// The operation graph with the heuristics' candidates queried and filtered
// (not yet built): only deterministic engines without a barred note that
// fit the workspace.
absl::StatusOr<std::shared_ptr<fe::graph::Graph>> MakeGraph(
    cudnnHandle_t handle, const Conv2d::Shape& s, int epilogue, int n, int h,
    int w, int out_h, int out_w, int64_t workspace_limit);

}  // namespace diarization::models::cuda::conv_graph

#endif  // __has_include(<cudnn_frontend.h>)
#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDNN_CONV_OPERATION_GRAPH_H_
