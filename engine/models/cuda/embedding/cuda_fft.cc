#include "engine/models/cuda/embedding/cuda_fft.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"

namespace diarization::models::cuda {
namespace {

absl::Status CufftStatus(cufftResult r, const std::string& what) {
  if (r == CUFFT_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, " failed: cuFFT error ", static_cast<int>(r)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RealFftPlans>> RealFftPlans::Create(
    CudaContext* ctx, int length, int rows_per_item, int max_items,
    const std::string& owner) {
  if (length < 2 || length % 2 != 0 || rows_per_item < 1 || max_items < 1 ||
      int64_t{rows_per_item} * max_items > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RealFftPlans ", owner, ": length ", length, " (even, >= 2), ",
        rows_per_item, " rows per item, ", max_items, " items"));
  }
  std::unique_ptr<RealFftPlans> f(new RealFftPlans());
  f->ctx_ = ctx;
  f->max_items_ = max_items;
  std::vector<int> counts;
  for (int c = 1; c < max_items; c *= 2) counts.push_back(c);
  counts.push_back(max_items);
  size_t work = 0;
  const int bins = length / 2 + 1;
  RETURN_IF_ERROR(BookLibraryDeviceMemory(
      ctx->arena(), owner + "/cufft_plans", [&]() -> absl::Status {
        for (const int c : counts) {
          cufftHandle h = 0;
          RETURN_IF_ERROR(CufftStatus(cufftCreate(&h), "cufftCreate"));
          f->plans_[c] = h;  // destroyed with f from here on
          RETURN_IF_ERROR(CufftStatus(cufftSetAutoAllocation(h, 0),
                                      "cufftSetAutoAllocation"));
          int n = length;
          size_t ws = 0;
          RETURN_IF_ERROR(CufftStatus(
              cufftMakePlanMany(h, 1, &n, nullptr, 1, length, nullptr, 1, bins,
                                CUFFT_D2Z, c * rows_per_item, &ws),
              absl::StrCat("cufftMakePlanMany (", owner, ", ", c, " items)")));
          RETURN_IF_ERROR(
              CufftStatus(cufftSetStream(h, ctx->stream()), "cufftSetStream"));
          work = std::max(work, ws);
        }
        return absl::OkStatus();
      }));
  if (work > 0) {
    ASSIGN_OR_RETURN(f->work_,
                     DeviceBuffer::Allocate(ctx->arena(), work, owner));
    for (auto& [c, h] : f->plans_) {
      RETURN_IF_ERROR(CufftStatus(cufftSetWorkArea(h, f->work_.data()),
                                  "cufftSetWorkArea"));
    }
  }
  return f;
}

RealFftPlans::~RealFftPlans() {
  for (auto& [c, h] : plans_) cufftDestroy(h);
}

int RealFftPlans::PlannedItems(int items) const {
  const auto it = plans_.lower_bound(std::max(1, items));
  return it == plans_.end() ? max_items_ : it->first;
}

absl::Status RealFftPlans::Forward(const double* in, int items, double* out) {
  if (in == nullptr || out == nullptr || items < 1 || items > max_items_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RealFftPlans::Forward: ", items, " items (1..", max_items_, ")"));
  }
  const cufftHandle h = plans_.at(PlannedItems(items));
  // cuFFT's D2Z takes a non-const input (it may overwrite it only for
  // out-of-place multi-dimensional transforms; this one is 1-D).
  return CufftStatus(cufftExecD2Z(h, const_cast<double*>(in),
                                  reinterpret_cast<cufftDoubleComplex*>(out)),
                     "cufftExecD2Z (fbank)");
}

}  // namespace diarization::models::cuda
