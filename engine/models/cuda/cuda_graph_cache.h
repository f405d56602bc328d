// CUDA graphs keyed by batch shape: the first call of a shape runs the
// enqueue function eagerly (choosing cuDNN algorithms, loading kernels) and
// then captures it; later calls replay the graph. Buffers must stay at fixed
// addresses, which the arena guarantees.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_GRAPH_CACHE_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_GRAPH_CACHE_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "engine/models/cuda/device_arena.h"

namespace diarization::models::cuda {

class GraphCache {
 public:
  GraphCache(cudaStream_t stream, DeviceArena* arena, std::string owner)
      : stream_(stream), arena_(arena), owner_(std::move(owner)) {}
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // Runs `enqueue` for `key` on the stream: eagerly (and captures it) the
  // first time, as a graph launch afterwards. With use_graphs false, always
  // eagerly.
  absl::Status Run(std::pair<int, int> key, bool use_graphs,
                   const std::function<absl::Status()>& enqueue);
  int size() const { return static_cast<int>(graphs_.size()); }

 private:
  cudaStream_t stream_;
  DeviceArena* arena_;
  std::string owner_;
  size_t graph_bytes_ = 0;
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_GRAPH_CACHE_H_
