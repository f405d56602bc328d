#include "engine/models/cuda/cuda_window_upload.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "kernels/window_gather.h"

namespace diarization::models::cuda {
namespace {

// Whether `p` lies in page-locked host memory that the device can copy from
// directly (cudaHostAlloc, cudaHostRegister).
bool IsPageLocked(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // not sticky; leave no error behind
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

WindowUploader::CopyStream::~CopyStream() {
  if (copied != nullptr) cudaEventDestroy(copied);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

absl::Status WindowUploader::UseCopyStream() {
  if (copy_ != nullptr) return absl::OkStatus();
  if (audio_.data() == nullptr) {
    return absl::FailedPreconditionError(
        "WindowUploader::UseCopyStream: the staging is the caller's memory, "
        "which may hold the caller's data while an earlier batch runs");
  }
  auto copy = std::make_unique<CopyStream>();
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithFlags(&copy->stream, cudaStreamNonBlocking),
      "creating the window uploader's copy stream"));
  RETURN_IF_ERROR(CudaStatus(
      cudaEventCreateWithFlags(&copy->copied, cudaEventDisableTiming),
      "creating the window uploader's event"));
  copy_ = std::move(copy);
  return absl::OkStatus();
}

absl::StatusOr<WindowUploader> WindowUploader::Create(DeviceArena* arena,
                                                      int max_batch,
                                                      const std::string& owner,
                                                      float* device_staging) {
  if (max_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("WindowUploader: max_batch ", max_batch, " < 1"));
  }
  WindowUploader u;
  u.max_batch_ = max_batch;
  const size_t samples =
      size_t{static_cast<size_t>(max_batch)} * kWindowSamples;
  // 2 × max_batch int64 = 4 × max_batch floats.
  const size_t index_floats = size_t{static_cast<size_t>(max_batch)} * 4;
  ASSIGN_OR_RETURN(u.host_audio_,
                   PinnedBuffer::Allocate(samples, owner + " window spans"));
  ASSIGN_OR_RETURN(u.host_index_, PinnedBuffer::Allocate(
                                      index_floats, owner + " window index"));
  if (device_staging != nullptr) {
    u.staging_ = device_staging;
  } else {
    ASSIGN_OR_RETURN(u.audio_, DeviceBuffer::Allocate(
                                   arena, samples * sizeof(float), owner));
    u.staging_ = u.audio_.f32();
  }
  ASSIGN_OR_RETURN(u.index_, DeviceBuffer::Allocate(
                                 arena, index_floats * sizeof(float), owner));
  return u;
}

absl::Status WindowUploader::Upload(const WindowSpans& spans, int first, int n,
                                    const DeviceBuffer& windows,
                                    cudaStream_t stream) {
  if (n < 1 || n > max_batch_ || first < 0 || first + n > spans.batch() ||
      windows.bytes() <
          size_t{static_cast<size_t>(n)} * kWindowSamples * sizeof(float)) {
    return absl::InternalError(absl::StrCat(
        "WindowUploader::Upload: windows [", first, ", ", first + n, ") of ",
        spans.batch(), " with room for ", max_batch_));
  }
  const size_t capacity = host_audio_.size();
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (int i = first; i < first + n; ++i) {
    if (spans.ends[i] > spans.starts[i]) {
      lo = std::min(lo, spans.starts[i]);
      hi = std::max(hi, spans.ends[i]);
    }
  }
  if (lo > hi) lo = hi = 0;  // every window is silence (empty spans)
  // Page-locked audio (runtime::Device::pinned_host_floats) is copied to the
  // device from where it lies; other audio is first copied into host_audio_,
  // as an asynchronous copy from pageable memory would be staged by the
  // driver anyway.
  const bool direct = hi > lo && IsPageLocked(spans.audio.data());
  std::vector<std::pair<int64_t, int64_t>> runs;  // (source, count)
  int64_t* starts = reinterpret_cast<int64_t*>(host_index_.data());
  int64_t* ends = starts + max_batch_;
  int64_t staged = 0;
  if (static_cast<size_t>(hi - lo) <= capacity) {
    // The covering range once; windows index into it.
    staged = hi - lo;
    if (staged > 0) runs.emplace_back(lo, staged);
    for (int i = 0; i < n; ++i) {
      const int64_t s = spans.starts[first + i], e = spans.ends[first + i];
      starts[i] = e > s ? s - lo : 0;
      ends[i] = e > s ? e - lo : 0;
    }
  } else {
    // Back to back: at most n × kWindowSamples <= capacity.
    for (int i = 0; i < n; ++i) {
      const int64_t s = spans.starts[first + i], e = spans.ends[first + i];
      if (e > s) runs.emplace_back(s, e - s);
      starts[i] = staged;
      ends[i] = staged + (e - s);
      staged += e - s;
    }
  }
  // The copies' stream: the caller's, or the uploader's own. The staging is
  // free on both: the caller synchronised its stream, and with it the
  // previous gather, before this call (Lifetime above).
  const cudaStream_t copies = copy_ != nullptr ? copy_->stream : stream;
  int64_t at = 0;
  for (const auto& [source, count] : runs) {
    const float* from = spans.audio.data() + source;
    if (direct) {
      RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(staging_ + at, from, sizeof(float) * count,
                                     cudaMemcpyHostToDevice, copies),
                     "copying window spans to the device"));
    } else {
      std::memcpy(host_audio_.data() + at, from, sizeof(float) * count);
    }
    at += count;
  }
  if (!direct && staged > 0) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(staging_, host_audio_.data(), sizeof(float) * staged,
                        cudaMemcpyHostToDevice, copies),
        "copying window spans to the device"));
  }
  int64_t* d_starts = static_cast<int64_t*>(index_.data());
  int64_t* d_ends = d_starts + max_batch_;
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(d_starts, starts, sizeof(int64_t) * n,
                                 cudaMemcpyHostToDevice, copies),
                 "copying window starts to the device"));
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(d_ends, ends, sizeof(int64_t) * n,
                                             cudaMemcpyHostToDevice, copies),
                             "copying window ends to the device"));
  if (copy_ != nullptr) {
    RETURN_IF_ERROR(CudaStatus(cudaEventRecord(copy_->copied, copies),
                               "recording the window copies"));
    RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, copy_->copied, 0),
                               "ordering the window gather after its copies"));
  }
  return kernels::LaunchGatherWindows({.audio = staging_,
                                       .audio_samples = staged,
                                       .starts = d_starts,
                                       .ends = d_ends,
                                       .windows = windows.f32(),
                                       .batch = n,
                                       .window_samples = kWindowSamples},
                                      stream);
}

}  // namespace diarization::models::cuda
