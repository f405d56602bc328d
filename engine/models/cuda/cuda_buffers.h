// Memory of the CUDA backend: device buffers allocated from the device arena
// (every device byte booked to an owner), page-locked host staging buffers,
// the asynchronous copies between the two, and FP16 uploads.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUFFERS_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUFFERS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/models/cuda/device_arena.h"

namespace diarization::models::cuda {

// One allocation from the arena, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(DeviceArena* arena, size_t bytes,
                                               const std::string& owner);
  // Allocates and copies `host` in (synchronously).
  static absl::StatusOr<DeviceBuffer> FromHost(DeviceArena* arena,
                                               std::span<const float> host,
                                               const std::string& owner);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  float* f32() const { return static_cast<float*>(ptr_); }
  double* f64() const { return static_cast<double*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  DeviceArena* arena_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host floats (cudaHostAlloc), freed on destruction: the staging
// area that makes host<->device copies asynchronous and capturable.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static absl::StatusOr<PinnedBuffer> Allocate(size_t floats,
                                               const std::string& what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

// `floats` floats of page-locked host memory that every CUDA context counts
// as such (cudaHostAllocPortable), freed when the last holder lets go; for
// memory that outlives any one model (runtime::Device::pinned_host_floats).
// `what` names it in errors.
absl::StatusOr<std::shared_ptr<float[]>> AllocateSharedPinned(
    size_t floats, const std::string& what);

// AllocateSharedPinned behind a pool: a request takes a buffer no one holds
// any more when one is large enough, else allocates one and keeps it.
// Pinning is slow (cudaHostAlloc of the ~100 MB that one pipeline's two
// stages ask took ~30 ms per offline pass on the H200, 2026-12-04), and the
// offline networks pass asks again for each recording. Holds at most as many
// buffers as were held at once. Thread-safe.
class SharedPinnedPool {
 public:
  absl::StatusOr<std::shared_ptr<float[]>> Get(size_t floats,
                                               const std::string& what);

 private:
  absl::Mutex mu_;
  std::vector<std::pair<std::shared_ptr<float[]>, size_t>> buffers_
      ABSL_GUARDED_BY(mu_);
};

// Copies `count` floats from `src` into `staging`, then enqueues the copy from
// `staging` to `device` on `stream`. `what` names the data in errors.
absl::Status UploadStaged(const float* src, size_t count,
                          const PinnedBuffer& staging,
                          const DeviceBuffer& device, cudaStream_t stream,
                          const std::string& what);

// Enqueues the copy of `count` floats from `device` to `staging` on `stream`;
// they are in `staging` once the stream is synchronised.
absl::Status DownloadAsync(const DeviceBuffer& device, size_t count,
                           const PinnedBuffer& staging, cudaStream_t stream,
                           const std::string& what);

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_CUDA_BUFFERS_H_
