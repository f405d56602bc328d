#include "kernels/qualification.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace diarization::kernels {

absl::StatusOr<QualificationRecord> ParseQualificationRecord(
    std::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        "qualification record: not a JSON object");
  }
  QualificationRecord r;
  try {
    const auto& dev = j.at("device");
    r.device_name = dev.at("name").get<std::string>();
    r.compute_capability = dev.at("compute_capability").get<std::string>();
    if (j.contains("complete")) r.complete = j.at("complete").get<bool>();
    for (const auto& [name, hash] : j.at("sources").items())
      r.source_hashes[name] = hash.get<std::string>();
    for (const auto& t : j.at("tuples")) {
      QualificationTuple q;
      q.kernel = t.at("kernel").get<std::string>();
      q.layer = t.at("layer").get<std::string>();
      q.batch = t.at("batch").get<int>();
      q.precision = t.at("precision").get<std::string>();
      q.qualified = t.at("qualified").get<bool>();
      if (t.contains("reason")) q.reason = t.at("reason").get<std::string>();
      if (t.contains("group")) {
        q.group = t.at("group").get<int>();
        if (q.group < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("qualification record: tuple ", q.kernel, " batch ",
                           q.batch, " has group ", q.group));
        }
      }
      r.tuples.push_back(std::move(q));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("qualification record: ", e.what()));
  }
  return r;
}

KernelSelection SelectQualified(
    const QualificationRecord* record,
    const std::vector<std::pair<std::string, std::string>>& hashes,
    const std::string& kernel, int batch, const std::string& precision,
    const std::string& device_name, const std::string& compute_capability) {
  auto fallback = [](std::string why) {
    return KernelSelection{.use_custom = false, .reason = std::move(why)};
  };
  if (record == nullptr) {
    return fallback("no kernel qualification record in this build");
  }
  if (record->device_name != device_name ||
      record->compute_capability != compute_capability) {
    return fallback(absl::StrCat("qualified on ", record->device_name, " (sm ",
                                 record->compute_capability, "), this is ",
                                 device_name, " (sm ", compute_capability,
                                 ")"));
  }
  std::string built;
  for (const auto& [name, hash] : hashes) {
    if (name == kernel) built = hash;
  }
  auto it = record->source_hashes.find(kernel);
  if (it == record->source_hashes.end()) {
    return fallback(absl::StrCat("no record for kernel ", kernel));
  }
  if (built.empty() || it->second != built) {
    return fallback(absl::StrCat(
        "kernel ", kernel, " changed since its qualification (sources ",
        built.substr(0, 12), ", qualified ", it->second.substr(0, 12), ")"));
  }
  // Every tuple of the kernel at this batch and precision must qualify: a
  // kernel recorded per layer (conv3x3_c32: conv1 and conv2 forms) runs
  // only where all its layers did.
  const QualificationTuple* chosen = nullptr;
  for (const QualificationTuple& t : record->tuples) {
    if (t.kernel != kernel || t.batch != batch || t.precision != precision)
      continue;
    if (!t.qualified) {
      return fallback(absl::StrCat(kernel, " batch ", batch, " ", precision,
                                   t.layer.empty() || t.layer == "all"
                                       ? ""
                                       : absl::StrCat(" (", t.layer, ")"),
                                   " not qualified: ", t.reason));
    }
    if (chosen == nullptr) chosen = &t;
  }
  if (chosen == nullptr) {
    return fallback(absl::StrCat("no qualification of ", kernel, " for batch ",
                                 batch, " ", precision));
  }
  return KernelSelection{
      .use_custom = true,
      .reason = absl::StrCat(
          kernel, " qualified for batch ", batch, " ", precision,
          chosen->group > 0 ? absl::StrCat(" with group ", chosen->group) : "",
          " on ", device_name),
      .group = chosen->group};
}

KernelSelection SelectEmbeddedQualified(const std::string& kernel, int batch,
                                        const std::string& precision,
                                        const std::string& device_name,
                                        const std::string& compute_capability) {
  struct Parsed {
    std::unique_ptr<QualificationRecord> record;
    std::string error;
  };
  static const Parsed* parsed = [] {
    auto* p = new Parsed;
    const std::string_view json = EmbeddedQualificationJson();
    if (json.empty()) return p;
    absl::StatusOr<QualificationRecord> r = ParseQualificationRecord(json);
    if (r.ok()) {
      p->record = std::make_unique<QualificationRecord>(*std::move(r));
    } else {
      p->error = std::string(r.status().message());
    }
    return p;
  }();
  KernelSelection s =
      SelectQualified(parsed->record.get(), KernelSourceHashes(), kernel, batch,
                      precision, device_name, compute_capability);
  if (!parsed->error.empty()) s.reason += " (" + parsed->error + ")";
  return s;
}

}  // namespace diarization::kernels
