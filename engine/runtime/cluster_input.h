// Internal: what a clustering (final or provisional) takes from its job —
// copies of the network outputs of its first windows — so that a host task
// never touches job state (host_tasks.h).
#ifndef DIARIZATION_ENGINE_RUNTIME_CLUSTER_INPUT_H_
#define DIARIZATION_ENGINE_RUNTIME_CLUSTER_INPUT_H_

#include <cstdint>
#include <vector>

#include "engine/pipeline/config.h"

namespace diarization::runtime::internal {

// What a clustering needs: the network outputs of windows [0, num_windows).
struct ClusterInput {
  std::vector<float> segmentations;  // (C × 589 × 3)
  std::vector<float> embeddings;     // (C × 3 × 256)
  int num_windows = 0;
  pipeline::PipelineConfig config;
  pipeline::SpeakerHints hints;

  int64_t bytes() const {
    return static_cast<int64_t>(
        (segmentations.capacity() + embeddings.capacity()) * sizeof(float));
  }
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_CLUSTER_INPUT_H_
