#include "engine/runtime/devices.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/common/status_macros.h"
#include "engine/io/plda_files.h"
#include "engine/models/cpu/cpu_backend.h"
#include "engine/pipeline/plda.h"

namespace diarization::runtime {

absl::StatusOr<Device> MakeCpuDevice(const models::ModelDirectory& dir,
                                     const models::CpuBackendOptions& options) {
  ASSIGN_OR_RETURN(models::CpuBackend cpu,
                   models::CreateCpuBackend(dir, options));
  Device d;
  d.name = "cpu";
  d.description = cpu.description;
  d.segmentation_precision = cpu.precision;
  d.embedding_precision = cpu.precision;
  d.segmentation = std::move(cpu.segmentation);
  d.embedding = std::move(cpu.embedding);
  return d;
}

BatchSizes DefaultBatchSizes(const DeviceSpec& spec) {
  if (spec.cpu) {
    const int run = models::CpuModelOptions{}.max_windows_per_run;
    return {.segmentation = run, .embedding = run, .live_windows_first = true};
  }
  // EngineOptions' (devices_test checks that they agree).
  const models::CudaBackendOptions cuda;
  return {.segmentation = cuda.segmentation.max_batch,
          .embedding = cuda.embedding.max_batch};
}

absl::StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& device) {
  DeviceSpec spec;
  if (device == "auto") {
    if (CudaBackendLinked() && CudaDeviceCount() > 0) {
      spec.all_cuda = true;
    } else {
      spec.cpu = true;
    }
    return spec;
  }
  if (device == "cpu") {
    spec.cpu = true;
    return spec;
  }
  if (device == "cuda") {
    spec.all_cuda = true;
    return spec;
  }
  if (device.rfind("cuda:", 0) == 0) {
    for (absl::string_view part : absl::StrSplit(device.substr(5), ',')) {
      int ordinal = -1;
      if (!absl::SimpleAtoi(part, &ordinal) || ordinal < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--device=", device, ": '", part, "' is not a GPU ordinal"));
      }
      for (int seen : spec.cuda_ordinals) {
        if (seen == ordinal) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--device=", device, ": cuda:", ordinal, " is listed twice"));
        }
      }
      spec.cuda_ordinals.push_back(ordinal);
    }
    return spec;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--device=", device, ": use auto, cpu, cuda or cuda:N[,M...]"));
}

absl::StatusOr<LoadedDevices> LoadDevices(const std::string& dir,
                                          const DevicesOptions& options) {
  ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(options.device));
  if (options.pipelines_per_device < 1 || options.pipelines_per_device > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pipelines_per_device=", options.pipelines_per_device,
                     ": use 1 to 8 pipelines per GPU"));
  }
  if ((spec.all_cuda || !spec.cuda_ordinals.empty()) && !CudaBackendLinked()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device=", options.device,
                     ": this binary was built without the CUDA backend; run "
                     "//server:diarization_server_cuda, or use --device=cpu"));
  }
  if (spec.all_cuda) {
    const int count = CudaDeviceCount();
    if (count == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--device=", options.device,
          ": no GPU is visible (driver, CUDA_VISIBLE_DEVICES?); use "
          "--device=cpu"));
    }
    for (int i = 0; i < count; ++i) spec.cuda_ordinals.push_back(i);
  }

  ASSIGN_OR_RETURN(std::unique_ptr<models::ModelDirectory> models,
                   models::ModelDirectory::Open(dir));
  LoadedDevices loaded;
  const models::ModelDirectorySummary summary = models->summary();
  for (const auto& [role, model] :
       {std::pair{"segmentation", &summary.segmentation},
        std::pair{"embedding", &summary.embedding},
        std::pair{"plda", &summary.plda}}) {
    LoadedModel& m = loaded.models.emplace_back();
    m.role = role;
    m.name = model->name;
    m.architecture = model->architecture;
    m.precision = model->precision;
    m.random_weights = model->random_weights;
    m.source = model->source;
    for (const models::ManifestFile& f : model->files) {
      m.files.push_back({.path = f.path, .sha256 = f.sha256, .bytes = f.bytes});
    }
    loaded.random_weights = loaded.random_weights || m.random_weights;
  }
  ASSIGN_OR_RETURN(pipeline::PldaModel plda, io::LoadPlda(models->plda_dir()));
  loaded.plda = std::make_shared<const pipeline::PldaModel>(std::move(plda));

  if (spec.cpu) {
    ASSIGN_OR_RETURN(Device d, MakeCpuDevice(*models, options.cpu));
    loaded.devices.push_back(std::move(d));
  }
  for (int ordinal : spec.cuda_ordinals) {
    for (int p = 0; p < options.pipelines_per_device; ++p) {
      ASSIGN_OR_RETURN(
          Device d, MakeCudaDevice(*models, ordinal,
                                   {.pipeline = p,
                                    .pipelines = options.pipelines_per_device,
                                    .gpu_linkage = options.gpu_linkage},
                                   options.cuda));
      loaded.devices.push_back(std::move(d));
    }
  }
  return loaded;
}

}  // namespace diarization::runtime
