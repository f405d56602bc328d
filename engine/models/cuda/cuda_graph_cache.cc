#include "engine/models/cuda/cuda_graph_cache.h"

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {

GraphCache::~GraphCache() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
}

absl::Status GraphCache::Run(std::pair<int, int> key, bool use_graphs,
                             const std::function<absl::Status()>& enqueue) {
  if (!use_graphs) return enqueue();
  auto it = graphs_.find(key);
  if (it != graphs_.end()) {
    return CudaStatus(cudaGraphLaunch(it->second, stream_), "cudaGraphLaunch");
  }
  // First time for this shape: run eagerly (its result is the caller's), then
  // capture the same work for later calls.
  RETURN_IF_ERROR(enqueue());
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
  size_t free_before = 0, free_after = 0, total = 0;
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo"));
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
      "cudaStreamBeginCapture"));
  absl::Status enqueued = enqueue();
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  if (!enqueued.ok() || end != cudaSuccess) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return absl::InternalError(absl::StrCat(
        "capturing a CUDA graph for batch shape (", key.first, ", ", key.second,
        ") failed: ",
        enqueued.ok() ? cudaGetErrorString(end) : enqueued.message(),
        ". Set use_cuda_graphs = false to run without graphs."));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  RETURN_IF_ERROR(CudaStatus(inst, "cudaGraphInstantiate"));
  graphs_[key] = exec;
  RETURN_IF_ERROR(
      CudaStatus(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo"));
  // Graph instantiation may take device memory the arena cannot provide.
  if (free_before > free_after) graph_bytes_ += free_before - free_after;
  arena_->RecordExternal(owner_ + "/cuda_graphs", graph_bytes_);
  return absl::OkStatus();
}

}  // namespace diarization::models::cuda
