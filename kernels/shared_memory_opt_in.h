// Opting a kernel in to more than 48 KiB of dynamic shared memory.
//
// cudaFuncSetAttribute applies to the current device only: a process that
// runs one pipeline per GPU must opt in on each device (a kernel opted in on
// cuda:0 alone failed to launch on cuda:1 with "invalid argument").
#ifndef DIARIZATION_KERNELS_SHARED_MEMORY_OPT_IN_H_
#define DIARIZATION_KERNELS_SHARED_MEMORY_OPT_IN_H_

#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <string>

#include "absl/status/status.h"

namespace diarization::kernels {

// Sets cudaFuncAttributeMaxDynamicSharedMemorySize = bytes for `func` on the
// current device, once per (function, device). The first call per device
// must come before any graph capture on that device (the models run each
// batch shape eagerly once before capturing it).
template <typename Kernel>
absl::Status OptInSharedMemory(Kernel* func, int bytes, const char* name) {
  static std::mutex mu;
  static std::set<int> done;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    std::lock_guard<std::mutex> lock(mu);
    if (done.count(device)) return absl::OkStatus();
    err = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               bytes);
    if (err == cudaSuccess) done.insert(device);
  }
  if (err != cudaSuccess) {
    return absl::InternalError(std::string(name) +
                               ": cudaFuncSetAttribute failed: " +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_SHARED_MEMORY_OPT_IN_H_
