#include "engine/models/format/manifest.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace diarization::models {
namespace {

using json = nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("manifest field ", field, " ", what));
}

absl::StatusOr<std::string> GetString(const json& j, const std::string& key,
                                      const std::string& where) {
  if (!j.contains(key)) return Bad(where + "." + key, "is missing");
  if (!j[key].is_string()) return Bad(where + "." + key, "is not a string");
  return j[key].get<std::string>();
}

absl::Status CheckSha256(const std::string& hex, const std::string& where) {
  if (hex.size() != 64 ||
      hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Bad(where,
               absl::StrCat("is not 64 lower-case hex digits: \"", hex, "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<ManifestModel> ParseModel(const json& root,
                                         const std::string& role,
                                         bool has_tensors) {
  if (!root.contains(role)) return Bad(role, "is missing");
  const json& j = root[role];
  if (!j.is_object()) return Bad(role, "is not an object");
  ManifestModel m;
  ASSIGN_OR_RETURN(m.name, GetString(j, "name", role));
  ASSIGN_OR_RETURN(m.architecture, GetString(j, "architecture", role));
  ASSIGN_OR_RETURN(m.source, GetString(j, "source", role));
  if (!j.contains("random_weights") || !j["random_weights"].is_boolean()) {
    return Bad(role + ".random_weights", "is missing or not a boolean");
  }
  m.random_weights = j["random_weights"].get<bool>();
  if (!j.contains("files") || !j["files"].is_array() || j["files"].empty()) {
    return Bad(role + ".files", "is missing, not an array or empty");
  }
  for (size_t i = 0; i < j["files"].size(); ++i) {
    const json& f = j["files"][i];
    const std::string where = absl::StrCat(role, ".files[", i, "]");
    if (!f.is_object()) return Bad(where, "is not an object");
    ManifestFile file;
    ASSIGN_OR_RETURN(file.path, GetString(f, "path", where));
    ASSIGN_OR_RETURN(file.sha256, GetString(f, "sha256", where));
    RETURN_IF_ERROR(CheckSha256(file.sha256, where + ".sha256"));
    if (!f.contains("bytes") || !f["bytes"].is_number_unsigned()) {
      return Bad(where + ".bytes", "is missing or not a non-negative integer");
    }
    file.bytes = f["bytes"].get<int64_t>();
    if (file.path.empty() || file.path[0] == '/' ||
        file.path.find("..") != std::string::npos) {
      return Bad(where + ".path",
                 absl::StrCat("must be relative, inside the directory: \"",
                              file.path, "\""));
    }
    m.files.push_back(std::move(file));
  }
  if (has_tensors) {
    ASSIGN_OR_RETURN(m.precision, GetString(j, "precision", role));
    if (m.precision != "fp32" && m.precision != "tf32") {
      return Bad(role + ".precision",
                 absl::StrCat("is \"", m.precision,
                              "\", expected \"fp32\" or \"tf32\""));
    }
    if (!j.contains("tensors") || !j["tensors"].is_array()) {
      return Bad(role + ".tensors", "is missing or not an array");
    }
    for (size_t i = 0; i < j["tensors"].size(); ++i) {
      const json& t = j["tensors"][i];
      const std::string where = absl::StrCat(role, ".tensors[", i, "]");
      if (!t.is_object()) return Bad(where, "is not an object");
      ManifestTensor tensor;
      ASSIGN_OR_RETURN(tensor.spec.name, GetString(t, "name", where));
      ASSIGN_OR_RETURN(std::string dtype, GetString(t, "dtype", where));
      absl::StatusOr<DType> parsed = ParseDType(dtype);
      if (!parsed.ok()) {
        return Bad(where + ".dtype", std::string(parsed.status().message()));
      }
      tensor.spec.dtype = *parsed;
      if (!t.contains("shape") || !t["shape"].is_array()) {
        return Bad(where + ".shape", "is missing or not an array");
      }
      for (const json& d : t["shape"]) {
        if (!d.is_number_unsigned()) {
          return Bad(where + ".shape", "has a non-integer or negative entry");
        }
        tensor.spec.shape.push_back(d.get<int64_t>());
      }
      ASSIGN_OR_RETURN(tensor.sha256, GetString(t, "sha256", where));
      RETURN_IF_ERROR(CheckSha256(tensor.sha256, where + ".sha256"));
      m.tensors.push_back(std::move(tensor));
    }
  }
  return m;
}

json ModelToJson(const ManifestModel& m, bool has_tensors) {
  json j = json::object();
  j["name"] = m.name;
  j["architecture"] = m.architecture;
  j["source"] = m.source;
  j["random_weights"] = m.random_weights;
  json files = json::array();
  for (const ManifestFile& f : m.files) {
    files.push_back(
        {{"path", f.path}, {"sha256", f.sha256}, {"bytes", f.bytes}});
  }
  j["files"] = std::move(files);
  if (has_tensors) {
    j["precision"] = m.precision;
    json tensors = json::array();
    for (const ManifestTensor& t : m.tensors) {
      tensors.push_back({{"name", t.spec.name},
                         {"dtype", DTypeName(t.spec.dtype)},
                         {"shape", t.spec.shape},
                         {"sha256", t.sha256}});
    }
    j["tensors"] = std::move(tensors);
  }
  return j;
}

}  // namespace

absl::StatusOr<Manifest> ParseManifest(const std::string& json_text) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest is not valid JSON: ", e.what()));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError("manifest is not a JSON object");
  }
  ASSIGN_OR_RETURN(std::string format, GetString(root, "format", "(root)"));
  if (format != kManifestFormat) {
    return Bad("format", absl::StrCat("is \"", format, "\", expected \"",
                                      kManifestFormat, "\""));
  }
  if (!root.contains("format_version") ||
      !root["format_version"].is_number_integer()) {
    return Bad("format_version", "is missing or not an integer");
  }
  Manifest m;
  m.format_version = root["format_version"].get<int>();
  if (m.format_version != kManifestFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("manifest format_version ", m.format_version,
                     " is not supported by this build (supports ",
                     kManifestFormatVersion, ")"));
  }
  ASSIGN_OR_RETURN(m.segmentation, ParseModel(root, "segmentation", true));
  ASSIGN_OR_RETURN(m.embedding, ParseModel(root, "embedding", true));
  ASSIGN_OR_RETURN(m.plda, ParseModel(root, "plda", false));
  return m;
}

std::string SerializeManifest(const Manifest& manifest) {
  json root = json::object();
  root["format"] = kManifestFormat;
  root["format_version"] = manifest.format_version;
  root["segmentation"] = ModelToJson(manifest.segmentation, true);
  root["embedding"] = ModelToJson(manifest.embedding, true);
  root["plda"] = ModelToJson(manifest.plda, false);
  return root.dump(2) + "\n";
}

}  // namespace diarization::models
