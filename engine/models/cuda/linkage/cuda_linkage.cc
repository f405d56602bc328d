#include "engine/models/cuda/linkage/cuda_linkage.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "kernels/centroid_linkage.h"
#include "kernels/euclidean_distances.h"

namespace diarization::models::cuda {

absl::StatusOr<std::unique_ptr<CudaLinkage>> CudaLinkage::Create(
    DeviceArena* arena, int max_n, int max_d) {
  if (max_n == 0) max_n = kernels::kCentroidLinkageMaxN;
  if (max_n < 2 || max_n > kernels::kCentroidLinkageMaxN) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA linkage: max_n must be in [2, ",
                     kernels::kCentroidLinkageMaxN, "], got ", max_n));
  }
  if (max_d < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA linkage: max_d must be >= 1, got ", max_d));
  }
  std::unique_ptr<CudaLinkage> l(new CudaLinkage());
  l->arena_ = arena;
  l->max_n_ = max_n;
  l->max_d_ = max_d;
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(arena->device()), "cudaSetDevice"));
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&l->stream_, cudaStreamNonBlocking),
                 "cudaStreamCreate"));
  const size_t n = static_cast<size_t>(max_n);
  ASSIGN_OR_RETURN(l->rows_, DeviceBuffer::Allocate(arena, n * max_d * 4,
                                                    "clustering/linkage"));
  ASSIGN_OR_RETURN(l->matrix_, DeviceBuffer::Allocate(arena, n * n * 8,
                                                      "clustering/linkage"));
  ASSIGN_OR_RETURN(l->merges_, DeviceBuffer::Allocate(
                                   arena, n * sizeof(kernels::LinkageMerge),
                                   "clustering/linkage"));
  ASSIGN_OR_RETURN(l->neighbor_,
                   DeviceBuffer::Allocate(arena, n * 4, "clustering/linkage"));
  ASSIGN_OR_RETURN(l->min_dist_,
                   DeviceBuffer::Allocate(arena, n * 8, "clustering/linkage"));
  ASSIGN_OR_RETURN(l->error_,
                   DeviceBuffer::Allocate(arena, 4, "clustering/linkage"));
  ASSIGN_OR_RETURN(l->host_rows_,
                   PinnedBuffer::Allocate(n * max_d, "the linkage's rows"));
  for (cudaEvent_t* e :
       {&l->start_, &l->uploaded_, &l->measured_, &l->linked_}) {
    RETURN_IF_ERROR(CudaStatus(cudaEventCreate(e), "cudaEventCreate"));
  }
  return l;
}

CudaLinkage::~CudaLinkage() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  for (cudaEvent_t e : {start_, uploaded_, measured_, linked_}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

CudaLinkage::Counts CudaLinkage::counts() const {
  std::lock_guard<std::mutex> lock(times_mu_);
  return {ran_.load(), busy_.load(), failed_.load(),
          upload_s_,   distances_s_, kernel_s_};
}

std::string CudaLinkage::Describe() const {
  const Counts c = counts();
  const double calls = static_cast<double>(std::max<int64_t>(1, c.ran));
  return absl::StrCat("GPU linkage: ", c.ran, " calls (upload ",
                      c.upload_s / calls, " s, distances ",
                      c.distances_s / calls, " s, linkage ", c.kernel_s / calls,
                      " s per call), ", c.busy, " busy, ", c.failed, " failed");
}

// A reservation: the lock while it is held.
class CudaLinkage::ReservedCall final
    : public pipeline::LinkageAccelerator::Call {
 public:
  ReservedCall(CudaLinkage* owner, std::unique_lock<std::mutex> lock, int n,
               int d)
      : owner_(owner), lock_(std::move(lock)), n_(n), d_(d) {}
  bool Run(std::span<const float> rows,
           std::vector<pipeline::Merge>* merges) override {
    absl::StatusOr<std::vector<pipeline::Merge>> z =
        owner_->RunLocked(rows, n_, d_, nullptr);
    if (!owner_->Count(z)) return false;
    *merges = *std::move(z);
    return true;
  }

 private:
  CudaLinkage* owner_;
  std::unique_lock<std::mutex> lock_;
  int n_, d_;
};

std::unique_ptr<pipeline::LinkageAccelerator::Call> CudaLinkage::Reserve(
    int n, int d) {
  if (n < 2 || n > max_n_ || d < 1 || d > max_d_) return nullptr;
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    busy_.fetch_add(1);
    return nullptr;
  }
  return std::make_unique<ReservedCall>(this, std::move(lock), n, d);
}

absl::StatusOr<std::vector<pipeline::Merge>> CudaLinkage::Run(
    std::span<const float> rows, int n, int d, std::vector<double>* distances) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    busy_.fetch_add(1);
    return absl::UnavailableError("CUDA linkage busy with another call");
  }
  absl::StatusOr<std::vector<pipeline::Merge>> z =
      RunLocked(rows, n, d, distances);
  Count(z);
  return z;
}

bool CudaLinkage::Count(const absl::StatusOr<std::vector<pipeline::Merge>>& z) {
  if (z.ok()) {
    ran_.fetch_add(1);
    return true;
  }
  failed_.fetch_add(1);
  if (!reported_.exchange(true)) {
    ReportDiagnostic(
        "clustering",
        absl::StrCat("the GPU linkage failed (", z.status().ToString(),
                     "); this and later failures run the host linkage"));
  }
  return false;
}

absl::StatusOr<std::vector<pipeline::Merge>> CudaLinkage::RunLocked(
    std::span<const float> rows, int n, int d, std::vector<double>* distances) {
  absl::StatusOr<std::vector<pipeline::Merge>> z =
      RunOnStream(rows, n, d, distances);
  // A call that failed after enqueueing may leave the rows' upload or the
  // kernels in flight; the next call rewrites the same staging and device
  // buffers, so nothing may still be running on the stream when the lock
  // is released (a sticky error makes this return at once).
  if (!z.ok()) cudaStreamSynchronize(stream_);
  return z;
}

absl::StatusOr<std::vector<pipeline::Merge>> CudaLinkage::RunOnStream(
    std::span<const float> rows, int n, int d, std::vector<double>* distances) {
  if (n < 2 || n > max_n_ || d < 1 || d > max_d_) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA linkage: n must be in [2, ", max_n_,
                     "] and d in [1, ", max_d_, "], got n ", n, ", d ", d));
  }
  const size_t count = static_cast<size_t>(n) * d;
  if (rows.size() < count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA linkage: ", n, " rows of ", d, " need ", count,
                     " floats, got ", rows.size()));
  }
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(arena_->device()), "cudaSetDevice"));
  // The rows through the page-locked staging: 4 MB for an audio hour
  // instead of the 128 MB matrix the host used to compute and upload.
  std::copy_n(rows.data(), count, host_rows_.data());
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(start_, stream_), "event"));
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(rows_.f32(), host_rows_.data(), count * sizeof(float),
                      cudaMemcpyHostToDevice, stream_),
      "linkage rows upload"));
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(uploaded_, stream_), "event"));
  RETURN_IF_ERROR(kernels::LaunchEuclideanDistances(
      {.rows = rows_.f32(), .n = n, .d = d, .matrix = matrix_.f64()}, stream_));
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(measured_, stream_), "event"));
  if (distances != nullptr) {
    distances->resize(static_cast<size_t>(n) * n);
    RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(distances->data(), matrix_.f64(),
                                   distances->size() * sizeof(double),
                                   cudaMemcpyDeviceToHost, stream_),
                   "linkage distances download"));
  }
  RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(error_.data(), 0, 4, stream_),
                             "cudaMemsetAsync"));
  RETURN_IF_ERROR(kernels::LaunchCentroidLinkage(
      {.matrix = matrix_.f64(),
       .n = n,
       .merges = static_cast<kernels::LinkageMerge*>(merges_.data()),
       .scratch_neighbor = static_cast<int*>(neighbor_.data()),
       .scratch_min = min_dist_.f64(),
       .error = static_cast<int*>(error_.data())},
      stream_));
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(linked_, stream_), "event"));
  std::vector<kernels::LinkageMerge> raw(n - 1);
  int error = 0;
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(raw.data(), merges_.data(),
                                 raw.size() * sizeof(kernels::LinkageMerge),
                                 cudaMemcpyDeviceToHost, stream_),
                 "linkage merges download"));
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(&error, error_.data(), 4,
                                             cudaMemcpyDeviceToHost, stream_),
                             "linkage error download"));
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamSynchronize(stream_), "linkage synchronize"));
  float upload_ms = 0, distances_ms = 0, kernel_ms = 0;
  RETURN_IF_ERROR(
      CudaStatus(cudaEventElapsedTime(&upload_ms, start_, uploaded_),
                 "cudaEventElapsedTime"));
  RETURN_IF_ERROR(
      CudaStatus(cudaEventElapsedTime(&distances_ms, uploaded_, measured_),
                 "cudaEventElapsedTime"));
  RETURN_IF_ERROR(
      CudaStatus(cudaEventElapsedTime(&kernel_ms, measured_, linked_),
                 "cudaEventElapsedTime"));
  {
    std::lock_guard<std::mutex> lock(times_mu_);
    upload_s_ += upload_ms * 1e-3;
    distances_s_ += distances_ms * 1e-3;
    kernel_s_ += kernel_ms * 1e-3;
  }
  if (error != 0) {
    return absl::InternalError(
        "CUDA linkage: no pair left to merge (NaN or infinite distances)");
  }
  std::vector<pipeline::Merge> z(n - 1);
  for (int k = 0; k < n - 1; ++k) {
    z[k] = {raw[k].a, raw[k].b, raw[k].distance, raw[k].size};
  }
  return z;
}

}  // namespace diarization::models::cuda
