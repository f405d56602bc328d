#include "engine/models/format/model_dir.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/models/format/model_specs.h"

namespace diarization::models {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read ", path.string(),
        " (make a model directory with `bazel run //tools:make_random_models "
        "-- --out DIR` or tools/convert/convert.py)"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The manifest must list exactly `expected` files.
absl::Status CheckFileList(const std::string& role, const ManifestModel& m,
                           const std::vector<std::string>& expected) {
  std::vector<std::string> got;
  for (const ManifestFile& f : m.files) got.push_back(f.path);
  if (got != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "manifest ", role, ".files lists [", absl::StrJoin(got, ", "),
        "], expected [", absl::StrJoin(expected, ", "), "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckFile(const fs::path& dir, const ManifestFile& file,
                       bool verify_hash) {
  const fs::path path = dir / file.path;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("model file ", path.string(),
                     " listed in the manifest: ", ec.message()));
  }
  if (static_cast<int64_t>(size) != file.bytes) {
    return absl::DataLossError(
        absl::StrCat("model file ", path.string(), " has ", size,
                     " bytes, the manifest says ", file.bytes));
  }
  if (verify_hash) {
    ASSIGN_OR_RETURN(std::string sha, Sha256HexOfFile(path.string()));
    if (sha != file.sha256) {
      return absl::DataLossError(absl::StrCat(
          "model file ", path.string(), " has SHA-256 ", sha,
          ", the manifest says ", file.sha256, " (damaged or replaced file)"));
    }
  }
  return absl::OkStatus();
}

std::string SpecString(const TensorSpec& s) {
  return absl::StrCat(s.name, " ", DTypeName(s.dtype), "[",
                      absl::StrJoin(s.shape, ","), "]");
}

// The file must match pyannote's module, and the manifest's tensor list must
// describe the file (same specs, same hashes).
absl::Status CheckTensors(const std::string& role, const ManifestModel& m,
                          const SafetensorsFile& file,
                          const std::vector<TensorSpec>& expected,
                          bool verify_hash) {
  RETURN_IF_ERROR(file.Validate(expected));
  std::map<std::string, const ManifestTensor*> listed;
  for (const ManifestTensor& t : m.tensors) listed[t.spec.name] = &t;
  if (listed.size() != m.tensors.size() || listed.size() != expected.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "manifest ", role, ".tensors lists ", m.tensors.size(), " tensors (",
        listed.size(), " distinct), the model has ", expected.size()));
  }
  for (const TensorSpec& spec : expected) {
    auto it = listed.find(spec.name);
    if (it == listed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "manifest ", role, ".tensors does not list ", spec.name));
    }
    const TensorSpec& got = it->second->spec;
    if (got.dtype != spec.dtype || got.shape != spec.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest ", role, ".tensors lists ", SpecString(got),
                       ", the model needs ", SpecString(spec)));
    }
    if (verify_hash) {
      const std::string sha = Sha256Hex(file.Find(spec.name)->bytes);
      if (sha != it->second->sha256) {
        return absl::DataLossError(absl::StrCat(
            "tensor ", spec.name, " in ", file.path(), " has SHA-256 ", sha,
            ", the manifest says ", it->second->sha256));
      }
    }
  }
  return absl::OkStatus();
}

ModelSummary Summarize(const ManifestModel& m) {
  ModelSummary s;
  s.name = m.name;
  s.architecture = m.architecture;
  s.precision = m.precision;
  s.random_weights = m.random_weights;
  s.source = m.source;
  s.files = m.files;
  return s;
}

absl::Status CheckArchitecture(const std::string& role, const ManifestModel& m,
                               const std::string& expected) {
  if (m.architecture != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest ", role, ".architecture is \"", m.architecture,
                     "\", this build runs \"", expected, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelDirectory>> ModelDirectory::Open(
    const std::string& dir, const Options& options) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) {
    return absl::NotFoundError(
        absl::StrCat("model directory ", dir, " does not exist"));
  }
  auto md = std::unique_ptr<ModelDirectory>(new ModelDirectory());
  md->dir_ = dir;
  ASSIGN_OR_RETURN(std::string text, ReadText(root / kManifestFileName));
  absl::StatusOr<Manifest> manifest = ParseManifest(text);
  if (!manifest.ok()) {
    return absl::Status(manifest.status().code(),
                        absl::StrCat((root / kManifestFileName).string(), ": ",
                                     manifest.status().message()));
  }
  md->manifest_ = *std::move(manifest);
  const Manifest& m = md->manifest_;

  RETURN_IF_ERROR(CheckArchitecture("segmentation", m.segmentation,
                                    kSegmentationArchitecture));
  RETURN_IF_ERROR(
      CheckArchitecture("embedding", m.embedding, kEmbeddingArchitecture));
  RETURN_IF_ERROR(CheckArchitecture("plda", m.plda, kPldaArchitecture));
  RETURN_IF_ERROR(
      CheckFileList("segmentation", m.segmentation, {kSegmentationFileName}));
  RETURN_IF_ERROR(
      CheckFileList("embedding", m.embedding, {kEmbeddingFileName}));
  RETURN_IF_ERROR(
      CheckFileList("plda", m.plda, {kXvecTransformFileName, kPldaFileName}));
  for (const ManifestModel* model : {&m.segmentation, &m.embedding, &m.plda}) {
    for (const ManifestFile& file : model->files) {
      RETURN_IF_ERROR(CheckFile(root, file, options.verify_hashes));
    }
  }

  ASSIGN_OR_RETURN(
      md->segmentation_,
      SafetensorsFile::Open((root / kSegmentationFileName).string()));
  ASSIGN_OR_RETURN(md->embedding_,
                   SafetensorsFile::Open((root / kEmbeddingFileName).string()));
  RETURN_IF_ERROR(CheckTensors("segmentation", m.segmentation,
                               *md->segmentation_, PyanNetTensorSpecs(),
                               options.verify_hashes));
  RETURN_IF_ERROR(CheckTensors("embedding", m.embedding, *md->embedding_,
                               ResNet34TensorSpecs(), options.verify_hashes));
  return md;
}

std::string ModelDirectory::plda_dir() const {
  return (fs::path(dir_) / "plda").string();
}

std::string ModelDirectory::xvec_transform_path() const {
  return (fs::path(dir_) / kXvecTransformFileName).string();
}

std::string ModelDirectory::plda_path() const {
  return (fs::path(dir_) / kPldaFileName).string();
}

ModelDirectorySummary ModelDirectory::summary() const {
  ModelDirectorySummary s;
  s.dir = dir_;
  s.format_version = manifest_.format_version;
  s.segmentation = Summarize(manifest_.segmentation);
  s.embedding = Summarize(manifest_.embedding);
  s.plda = Summarize(manifest_.plda);
  return s;
}

namespace {

// Orders `tensors` as `specs` and checks they match exactly.
absl::StatusOr<std::vector<const TensorData*>> Arrange(
    const std::string& role, const std::vector<TensorData>& tensors,
    const std::vector<TensorSpec>& specs) {
  std::map<std::string, const TensorData*> by_name;
  for (const TensorData& t : tensors) {
    if (!by_name.emplace(t.spec.name, &t).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, ": duplicate tensor ", t.spec.name));
    }
  }
  std::vector<const TensorData*> out;
  for (const TensorSpec& spec : specs) {
    auto it = by_name.find(spec.name);
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, ": missing tensor ", SpecString(spec)));
    }
    if (it->second->spec.dtype != spec.dtype ||
        it->second->spec.shape != spec.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, ": tensor is ", SpecString(it->second->spec),
                       ", expected ", SpecString(spec)));
    }
    out.push_back(it->second);
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, ": unexpected tensor ", by_name.begin()->first));
  }
  return out;
}

absl::StatusOr<ManifestModel> WriteNetwork(
    const fs::path& root, const std::string& file_name,
    const std::vector<TensorData>& tensors,
    const std::vector<TensorSpec>& specs, const ManifestModel& info) {
  ASSIGN_OR_RETURN(std::vector<const TensorData*> ordered,
                   Arrange(info.architecture, tensors, specs));
  std::vector<TensorData> copy;
  copy.reserve(ordered.size());
  ManifestModel m = info;
  m.files.clear();
  m.tensors.clear();
  for (const TensorData* t : ordered) {
    copy.push_back(*t);
    m.tensors.push_back({t->spec, Sha256Hex(t->bytes)});
  }
  const fs::path path = root / file_name;
  RETURN_IF_ERROR(WriteSafetensors(path.string(), copy,
                                   {{"format", "pt"},
                                    {"architecture", info.architecture},
                                    {"name", info.name}}));
  ASSIGN_OR_RETURN(std::string sha, Sha256HexOfFile(path.string()));
  m.files.push_back(
      {file_name, sha, static_cast<int64_t>(fs::file_size(path))});
  return m;
}

}  // namespace

absl::Status WriteModelDirectory(const std::string& dir,
                                 const ModelDirectoryContents& contents) {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root / "plda", ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create ", (root / "plda").string(), ": ", ec.message()));
  }
  // A stale manifest must not describe a half-written directory.
  fs::remove(root / kManifestFileName, ec);

  Manifest manifest;
  ASSIGN_OR_RETURN(
      manifest.segmentation,
      WriteNetwork(root, kSegmentationFileName, contents.segmentation,
                   PyanNetTensorSpecs(), contents.segmentation_info));
  ASSIGN_OR_RETURN(
      manifest.embedding,
      WriteNetwork(root, kEmbeddingFileName, contents.embedding,
                   ResNet34TensorSpecs(), contents.embedding_info));
  manifest.plda = contents.plda_info;
  manifest.plda.files.clear();
  manifest.plda.tensors.clear();
  manifest.plda.precision.clear();
  for (const char* name : {kXvecTransformFileName, kPldaFileName}) {
    const fs::path source =
        fs::path(contents.plda_source_dir) / fs::path(name).filename();
    const fs::path target = root / name;
    fs::copy_file(source, target, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return absl::NotFoundError(
          absl::StrCat("cannot copy PLDA file ", source.string(), " to ",
                       target.string(), ": ", ec.message()));
    }
    ASSIGN_OR_RETURN(std::string sha, Sha256HexOfFile(target.string()));
    manifest.plda.files.push_back(
        {name, sha, static_cast<int64_t>(fs::file_size(target))});
  }

  const fs::path tmp = root / (std::string(kManifestFileName) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << SerializeManifest(manifest);
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
    }
  }
  fs::rename(tmp, root / kManifestFileName, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
