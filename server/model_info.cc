#include "server/model_info.h"

namespace diarization::server {
namespace {

v1::ModelInfo Describe(const char* role, const models::ModelSummary& m) {
  v1::ModelInfo info;
  info.set_role(role);
  info.set_name(m.name);
  info.set_architecture(m.architecture);
  info.set_precision(m.precision.empty() ? "fp64" : m.precision);
  info.set_random_weights(m.random_weights);
  info.set_source(m.source);
  for (const models::ManifestFile& f : m.files) {
    v1::ModelFile* file = info.add_files();
    file->set_path(f.path);
    file->set_sha256(f.sha256);
    file->set_size_bytes(f.bytes);
  }
  if (!m.files.empty()) info.set_sha256(m.files.front().sha256);
  return info;
}

}  // namespace

std::vector<v1::ModelInfo> DescribeModels(
    const models::ModelDirectorySummary& summary) {
  return {Describe("segmentation", summary.segmentation),
          Describe("embedding", summary.embedding),
          Describe("plda", summary.plda)};
}

}  // namespace diarization::server
