// The CPU-only build: no CUDA backend.
#include "absl/strings/str_cat.h"
#include "engine/runtime/devices.h"

namespace diarization::runtime {

bool CudaBackendLinked() { return false; }

int CudaDeviceCount() { return 0; }

absl::StatusOr<Device> MakeCudaDevice(
    const models::ModelDirectory& /*dir*/, int ordinal,
    const CudaDeviceOptions& /*options*/,
    const models::CudaBackendOptions& /*backend_options*/) {
  return absl::FailedPreconditionError(
      absl::StrCat("--device=cuda:", ordinal,
                   ": this binary was built without the CUDA backend; run "
                   "//server:diarization_server_cuda, or use --device=cpu"));
}

}  // namespace diarization::runtime
