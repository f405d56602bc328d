#include "server/identification.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/request_validation.h"
#include "server/status_util.h"

namespace diarization::server {
namespace {

static_assert(std::endian::native == std::endian::little,
              "voiceprints are float32 little-endian; this host is not");

absl::Status Invalid(auto&&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

// pyannote's labels stay with unmatched speakers; a known label of the same
// form would be ambiguous.
bool LooksLikePyannoteLabel(const std::string& label) {
  constexpr std::string_view kPrefix = "SPEAKER_";
  if (label.size() <= kPrefix.size() ||
      label.compare(0, kPrefix.size(), kPrefix) != 0) {
    return false;
  }
  for (size_t i = kPrefix.size(); i < label.size(); ++i) {
    if (label[i] < '0' || label[i] > '9') return false;
  }
  return true;
}

}  // namespace

std::string EmbeddingModelSha256(const ServiceState& state) {
  for (const v1::ModelInfo& m : state.models()) {
    if (m.role() == "embedding") return m.sha256();
  }
  return "";
}

absl::StatusOr<Identification> ValidateIdentification(
    const v1::DiarizationConfig& config, std::string_view embedding_sha256,
    int dim) {
  Identification out;
  const double t = config.identification_threshold();
  if (!std::isfinite(t) || t < -1.0 || t > 1.0) {
    return Invalid("identification_threshold is ", t,
                   "; it must be a cosine in [-1, 1] (0 = the default ",
                   pipeline::kDefaultIdentificationThreshold, ")");
  }
  if (t != 0.0) out.threshold = t;
  const int n = config.known_speakers_size();
  if (n > kMaxKnownSpeakers) {
    return Invalid("known_speakers has ", n, " entries; at most ",
                   kMaxKnownSpeakers, " are allowed");
  }
  std::set<std::string> labels;
  const size_t bytes = static_cast<size_t>(dim) * sizeof(float);
  for (int i = 0; i < n; ++i) {
    const v1::KnownSpeaker& k = config.known_speakers(i);
    const std::string field = absl::StrCat("known_speakers[", i, "]");
    if (absl::Status s = ValidateToken(k.label(), (field + ".label").c_str());
        !s.ok()) {
      return s;
    }
    if (LooksLikePyannoteLabel(k.label())) {
      return Invalid(field, ".label is \"", k.label(),
                     "\"; labels of the form SPEAKER_<digits> are kept for "
                     "unmatched speakers");
    }
    if (!labels.insert(k.label()).second) {
      return Invalid(field, ".label \"", k.label(),
                     "\" is given twice; labels must be unique");
    }
    const v1::Voiceprint& vp = k.voiceprint();
    if (vp.version() != kVoiceprintVersion) {
      return Invalid(field, ".voiceprint.version is ", vp.version(),
                     "; this server reads version ", kVoiceprintVersion);
    }
    if (vp.model_sha256() != embedding_sha256) {
      return AsApiStatus(absl::FailedPreconditionError(absl::StrCat(
          field, ".voiceprint was made by the embedding weights with sha256 ",
          vp.model_sha256().empty() ? "(none)" : vp.model_sha256(),
          "; this server runs ", std::string(embedding_sha256),
          ": enrol the speaker again on this server (CreateVoiceprint)")));
    }
    if (vp.embedding().size() != bytes) {
      return Invalid(field, ".voiceprint.embedding has ", vp.embedding().size(),
                     " bytes; the embedding model's voiceprints have ", bytes,
                     " (", dim, " float32 little-endian)");
    }
    pipeline::KnownSpeaker known{k.label(), std::vector<float>(dim)};
    std::memcpy(known.embedding.data(), vp.embedding().data(), bytes);
    for (int j = 0; j < dim; ++j) {
      if (!std::isfinite(known.embedding[j])) {
        return Invalid(field, ".voiceprint.embedding[", j, "] is ",
                       known.embedding[j], "; every value must be finite");
      }
    }
    bool all_zero = true;
    for (const float v : known.embedding) all_zero = all_zero && v == 0.0f;
    if (all_zero) {
      return Invalid(field,
                     ".voiceprint.embedding is all zero; it cannot be "
                     "scored");
    }
    out.known.push_back(std::move(known));
  }
  return out;
}

std::string EncodeEmbedding(std::span<const float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace diarization::server
