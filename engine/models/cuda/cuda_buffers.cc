#include "engine/models/cuda/cuda_buffers.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {

// --- DeviceBuffer -----------------------------------------------------------

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(DeviceArena* arena,
                                                    size_t bytes,
                                                    const std::string& owner) {
  DeviceBuffer b;
  ASSIGN_OR_RETURN(b.ptr_, arena->Allocate(bytes, owner));
  b.arena_ = arena;
  b.bytes_ = bytes;
  return b;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::FromHost(DeviceArena* arena,
                                                    std::span<const float> host,
                                                    const std::string& owner) {
  ASSIGN_OR_RETURN(DeviceBuffer b, Allocate(arena, host.size_bytes(), owner));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpy(b.ptr_, host.data(), host.size_bytes(),
                            cudaMemcpyHostToDevice),
                 absl::StrCat("copying ", owner, " to the device")));
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (arena_ != nullptr && ptr_ != nullptr) (void)arena_->Free(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept {
  *this = std::move(other);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (arena_ != nullptr && ptr_ != nullptr) (void)arena_->Free(ptr_);
    arena_ = std::exchange(other.arena_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// --- PinnedBuffer -----------------------------------------------------------

absl::StatusOr<PinnedBuffer> PinnedBuffer::Allocate(size_t floats,
                                                    const std::string& what) {
  PinnedBuffer b;
  RETURN_IF_ERROR(
      CudaStatus(cudaHostAlloc(reinterpret_cast<void**>(&b.data_),
                               floats * sizeof(float), cudaHostAllocDefault),
                 absl::StrCat("cudaHostAlloc (", floats * sizeof(float),
                              " bytes of pinned host memory for ", what, ")")));
  b.size_ = floats;
  return b;
}

absl::StatusOr<std::shared_ptr<float[]>> AllocateSharedPinned(
    size_t floats, const std::string& what) {
  float* data = nullptr;
  RETURN_IF_ERROR(
      CudaStatus(cudaHostAlloc(reinterpret_cast<void**>(&data),
                               floats * sizeof(float), cudaHostAllocPortable),
                 absl::StrCat("cudaHostAlloc (", floats * sizeof(float),
                              " bytes of pinned host memory for ", what, ")")));
  return std::shared_ptr<float[]>(data, [](float* p) { cudaFreeHost(p); });
}

absl::StatusOr<std::shared_ptr<float[]>> SharedPinnedPool::Get(
    size_t floats, const std::string& what) {
  absl::MutexLock lock(&mu_);
  for (const auto& [buffer, size] : buffers_) {
    // use_count 1: only the pool holds it (no copy is made elsewhere while
    // mu_ is held, as every holder got it from here).
    if (size >= floats && buffer.use_count() == 1) return buffer;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<float[]> buffer,
                   AllocateSharedPinned(floats, what));
  buffers_.emplace_back(buffer, floats);
  return buffer;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept {
  *this = std::move(other);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::Status UploadStaged(const float* src, size_t count,
                          const PinnedBuffer& staging,
                          const DeviceBuffer& device, cudaStream_t stream,
                          const std::string& what) {
  if (count > staging.size() || count * sizeof(float) > device.bytes()) {
    return absl::InternalError(
        absl::StrCat("copying ", what, ": ", count,
                     " floats exceed the staging or device buffer"));
  }
  std::memcpy(staging.data(), src, count * sizeof(float));
  return CudaStatus(
      cudaMemcpyAsync(device.data(), staging.data(), count * sizeof(float),
                      cudaMemcpyHostToDevice, stream),
      absl::StrCat("copying ", what, " to the device"));
}

absl::Status DownloadAsync(const DeviceBuffer& device, size_t count,
                           const PinnedBuffer& staging, cudaStream_t stream,
                           const std::string& what) {
  if (count > staging.size() || count * sizeof(float) > device.bytes()) {
    return absl::InternalError(
        absl::StrCat("copying ", what, ": ", count,
                     " floats exceed the staging or device buffer"));
  }
  return CudaStatus(
      cudaMemcpyAsync(staging.data(), device.data(), count * sizeof(float),
                      cudaMemcpyDeviceToHost, stream),
      absl::StrCat("copying ", what, " from the device"));
}

}  // namespace diarization::models::cuda
