#include "clients/cli/voiceprints.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace diarization::client {

absl::Status WriteVoiceprint(const v1::Voiceprint& voiceprint,
                             const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !voiceprint.SerializeToOstream(&out) || !out.flush()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write the voiceprint to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Voiceprint> ReadVoiceprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::Voiceprint vp;
  if (!vp.ParseFromString(bytes.str()) || vp.embedding().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        " is not a voiceprint file (diarize_client --enroll writes one)"));
  }
  return vp;
}

absl::StatusOr<std::vector<v1::KnownSpeaker>> LoadKnownSpeakers(
    const std::vector<std::string>& entries) {
  std::vector<v1::KnownSpeaker> out;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--known entry '", e, "' is not LABEL=VOICEPRINT_FILE"));
    }
    absl::StatusOr<v1::Voiceprint> vp = ReadVoiceprint(e.substr(eq + 1));
    if (!vp.ok()) return vp.status();
    v1::KnownSpeaker k;
    k.set_label(e.substr(0, eq));
    *k.mutable_voiceprint() = *std::move(vp);
    out.push_back(std::move(k));
  }
  return out;
}

absl::StatusOr<std::vector<v1::TimeRange>> ParseSpeechRanges(
    const std::vector<std::string>& entries) {
  std::vector<v1::TimeRange> out;
  for (const std::string& e : entries) {
    const size_t dash = e.find('-');
    double start = 0, end = 0;
    if (dash == std::string::npos ||
        !absl::SimpleAtod(e.substr(0, dash), &start) ||
        !absl::SimpleAtod(e.substr(dash + 1), &end)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--speech entry '", e, "' is not START-END (seconds)"));
    }
    v1::TimeRange r;
    r.set_start_s(start);
    r.set_end_s(end);
    out.push_back(r);
  }
  return out;
}

std::string FormatIdentities(const v1::DiarizeResult& result) {
  std::string out;
  for (const v1::SpeakerIdentity& id : result.identities()) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "identity %s best=%s score=%.4f %s\n", id.speaker(),
                  id.best_known_label().empty() ? "-" : id.best_known_label(),
                  id.best_score(), id.matched() ? "matched" : "unmatched"));
  }
  return out;
}

}  // namespace diarization::client
