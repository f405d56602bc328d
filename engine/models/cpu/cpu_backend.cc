#include "engine/models/cpu/cpu_backend.h"

#include <omp.h>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cpu/cpu_embedding_model.h"
#include "engine/models/cpu/cpu_segmentation_model.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace diarization::models {

absl::StatusOr<CpuBackend> CreateCpuBackend(const ModelDirectory& dir,
                                            const CpuBackendOptions& options) {
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU threads must be >= 0, got ", options.threads));
  }
  CpuModelOptions model_options{.threads = options.threads,
                                .lstm = options.lstm};
  CpuBackend backend;
  ASSIGN_OR_RETURN(
      backend.segmentation,
      CpuSegmentationModel::Create(dir.segmentation(), model_options));
  ASSIGN_OR_RETURN(backend.embedding,
                   CpuEmbeddingModel::Create(dir.embedding(), model_options));
  const dnnl_version_t* v = dnnl_version();
  const int threads =
      options.threads > 0 ? options.threads : omp_get_max_threads();
  backend.description =
      absl::StrCat("cpu (oneDNN ", v->major, ".", v->minor, ".", v->patch, ", ",
                   threads, " threads, fp32)");
  return backend;
}

}  // namespace diarization::models
