// Small helpers around oneDNN (libdnnl 2.6): one CPU engine per model,
// weight reorders into the layout a primitive prefers, and conversion of
// oneDNN's exceptions into absl::Status at the model boundary.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_DNNL_UTIL_H_
#define DIARIZATION_ENGINE_MODELS_CPU_DNNL_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace diarization::models {

// Copies `user` (held in `user_md`'s plain layout) into a new memory with
// `wanted` layout (a reorder when they differ).
dnnl::memory ReorderedCopy(const dnnl::engine& engine, dnnl::stream& stream,
                           const dnnl::memory::desc& user_md, const float* user,
                           const dnnl::memory::desc& wanted);

// Wraps a caller-owned float buffer as a oneDNN memory (no copy).
inline dnnl::memory Wrap(const dnnl::engine& engine,
                         const dnnl::memory::desc& md, const float* data) {
  return dnnl::memory(md, engine, const_cast<float*>(data));
}

// Status for a oneDNN exception caught while doing `what`.
absl::Status DnnlError(const dnnl::error& e, const std::string& what);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_DNNL_UTIL_H_
