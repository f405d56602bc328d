#include "server/model_info.h"

namespace diarization::server {

std::vector<v1::ModelInfo> DescribeModels(
    const std::vector<runtime::LoadedModel>& models) {
  std::vector<v1::ModelInfo> out;
  for (const runtime::LoadedModel& m : models) {
    v1::ModelInfo& info = out.emplace_back();
    info.set_role(m.role);
    info.set_name(m.name);
    info.set_architecture(m.architecture);
    info.set_precision(m.precision.empty() ? "fp64" : m.precision);
    info.set_random_weights(m.random_weights);
    info.set_source(m.source);
    for (const runtime::LoadedModel::File& f : m.files) {
      v1::ModelFile* file = info.add_files();
      file->set_path(f.path);
      file->set_sha256(f.sha256);
      file->set_size_bytes(f.bytes);
    }
    if (!m.files.empty()) info.set_sha256(m.files.front().sha256);
  }
  return out;
}

}  // namespace diarization::server
