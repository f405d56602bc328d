// Diarization error rate of an RTTM hypothesis against an RTTM reference,
// with pyannote.metrics' semantics (engine/eval/der.h, docs/der.md).
//
//   bazel run //tools:der -- --reference REF.rttm --hypothesis HYP.rttm
//       [--collar 0.25] [--skip-overlap] [--uem FILE.uem]
//       [--format text|json]
//
// Prints "DER=12.34%" and the components. Files are grouped by uri; with
// several, each file's line comes first and the totals are summed over files.
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "engine/common/user_path.h"
#include "engine/eval/der.h"
#include "engine/eval/uem.h"
#include "engine/pipeline/rttm.h"

ABSL_FLAG(std::string, reference, "", "Reference RTTM file.");
ABSL_FLAG(std::string, hypothesis, "", "Hypothesis RTTM file.");
ABSL_FLAG(double, collar, 0.0,
          "Total collar width in seconds around each reference boundary "
          "(half on each side), as pyannote.metrics' `collar`.");
ABSL_FLAG(bool, skip_overlap, false,
          "Do not evaluate regions where reference speakers overlap.");
ABSL_FLAG(std::string, uem, "",
          "Optional UEM file (uri channel start end): the regions to "
          "evaluate. Files it does not list, and all files without it, use "
          "pyannote's default: from the earliest start to the latest end of "
          "reference and hypothesis.");
ABSL_FLAG(std::string, format, "text",
          "text: DER=..% and components; json: every component, full "
          "precision.");

namespace {

using diarization::ResolveUserPath;
using diarization::Segment;
using diarization::eval::CorpusDer;
using diarization::eval::DerComponents;

double Percent(double part, double total) {
  return total > 0.0 ? 100.0 * part / total : 0.0;
}

void PrintText(const DerComponents& c) {
  std::printf("DER=%.2f%%\n", 100.0 * c.der());
  std::printf("missed detection: %.3f s (%.2f%%)\n", c.missed_s,
              Percent(c.missed_s, c.total_s));
  std::printf("false alarm: %.3f s (%.2f%%)\n", c.false_alarm_s,
              Percent(c.false_alarm_s, c.total_s));
  std::printf("confusion: %.3f s (%.2f%%)\n", c.confusion_s,
              Percent(c.confusion_s, c.total_s));
  std::printf("total (reference speech): %.3f s\n", c.total_s);
}

void PrintJsonComponents(const DerComponents& c) {
  std::printf(
      "\"total\": %.17g, \"correct\": %.17g, \"missed\": %.17g, "
      "\"false_alarm\": %.17g, \"confusion\": %.17g, \"der\": %.17g",
      c.total_s, c.correct_s, c.missed_s, c.false_alarm_s, c.confusion_s,
      c.der());
}

// Uris have no quotes or backslashes in RTTM (whitespace-separated, and
// pyannote refuses spaces); escape them anyway.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// absl flags spell names with '_'; accept the '-' spelling too
// (--skip-overlap).
std::vector<char*> NormalizeFlagNames(int argc, char** argv,
                                      std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  for (size_t i = 1; i < storage.size(); ++i) {
    std::string& arg = storage[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const size_t end = std::min(arg.find('='), arg.size());
    for (size_t k = 2; k < end; ++k) {
      if (arg[k] == '-') arg[k] = '_';
    }
  }
  std::vector<char*> pointers;
  for (std::string& s : storage) pointers.push_back(s.data());
  return pointers;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Diarization error rate (pyannote.metrics semantics).\n"
      "  der --reference REF.rttm --hypothesis HYP.rttm [--collar S] "
      "[--skip-overlap] [--uem FILE.uem] [--format text|json]");
  std::vector<std::string> storage;
  std::vector<char*> args = NormalizeFlagNames(argc, argv, storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());

  const std::string reference_path = absl::GetFlag(FLAGS_reference);
  const std::string hypothesis_path = absl::GetFlag(FLAGS_hypothesis);
  const std::string format = absl::GetFlag(FLAGS_format);
  if (reference_path.empty() || hypothesis_path.empty()) {
    std::fprintf(stderr, "der: --reference and --hypothesis are required\n");
    return 2;
  }
  if (format != "text" && format != "json") {
    std::fprintf(stderr, "der: --format must be text or json, got '%s'\n",
                 format.c_str());
    return 2;
  }
  absl::StatusOr<std::vector<Segment>> reference =
      diarization::ReadRttmFile(ResolveUserPath(reference_path));
  if (!reference.ok()) {
    std::fprintf(stderr, "der: %s\n", reference.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::vector<Segment>> hypothesis =
      diarization::ReadRttmFile(ResolveUserPath(hypothesis_path));
  if (!hypothesis.ok()) {
    std::fprintf(stderr, "der: %s\n", hypothesis.status().ToString().c_str());
    return 1;
  }
  // A uri on one side only is scored (as all missed or all false alarm),
  // but it is usually a mistake: say so.
  std::set<std::string> reference_uris, hypothesis_uris;
  for (const Segment& s : *reference) reference_uris.insert(s.uri);
  for (const Segment& s : *hypothesis) hypothesis_uris.insert(s.uri);
  for (const std::string& uri : reference_uris) {
    if (!hypothesis_uris.contains(uri)) {
      std::fprintf(stderr, "der: warning: no hypothesis for file '%s'\n",
                   uri.c_str());
    }
  }
  for (const std::string& uri : hypothesis_uris) {
    if (!reference_uris.contains(uri)) {
      std::fprintf(stderr, "der: warning: no reference for file '%s'\n",
                   uri.c_str());
    }
  }

  std::optional<diarization::eval::Uem> uem;
  if (const std::string uem_path = absl::GetFlag(FLAGS_uem);
      !uem_path.empty()) {
    absl::StatusOr<diarization::eval::Uem> parsed =
        diarization::eval::ReadUemFile(ResolveUserPath(uem_path));
    if (!parsed.ok()) {
      std::fprintf(stderr, "der: %s\n", parsed.status().ToString().c_str());
      return 1;
    }
    uem = std::move(*parsed);
    for (const std::string& uri : reference_uris) {
      if (!uem->contains(uri)) {
        std::fprintf(stderr,
                     "der: warning: file '%s' is not in the UEM; using the "
                     "default evaluated region\n",
                     uri.c_str());
      }
    }
  }

  const diarization::eval::DerOptions options{
      .collar_s = absl::GetFlag(FLAGS_collar),
      .skip_overlap = absl::GetFlag(FLAGS_skip_overlap)};
  absl::StatusOr<CorpusDer> der = diarization::eval::ComputeCorpusDer(
      *reference, *hypothesis, options, uem ? &*uem : nullptr);
  if (!der.ok()) {
    std::fprintf(stderr, "der: %s\n", der.status().ToString().c_str());
    return 1;
  }

  if (format == "json") {
    std::printf("{\"files\": [");
    for (size_t i = 0; i < der->files.size(); ++i) {
      std::printf("%s\n {\"uri\": %s, ", i == 0 ? "" : ",",
                  JsonString(der->files[i].uri).c_str());
      PrintJsonComponents(der->files[i].components);
      std::printf("}");
    }
    std::printf("],\n \"total\": {");
    PrintJsonComponents(der->total);
    std::printf("}}\n");
    return 0;
  }
  if (der->files.size() > 1) {
    for (const auto& file : der->files) {
      std::printf("file %s: DER=%.2f%% (total %.3f s)\n", file.uri.c_str(),
                  100.0 * file.components.der(), file.components.total_s);
    }
  }
  PrintText(der->total);
  return 0;
}
