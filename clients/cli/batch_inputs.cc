#include "clients/cli/batch_inputs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace diarization::client {
namespace {

namespace fs = std::filesystem;

std::string Lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Hidden(const fs::path& relative) {
  for (const fs::path& part : relative) {
    const std::string name = part.string();
    if (!name.empty() && name[0] == '.' && name != "." && name != "..") {
      return true;
    }
  }
  return false;
}

absl::Status AddDirectory(const fs::path& dir, std::vector<BatchInput>& out) {
  std::vector<BatchInput> found;
  std::error_code error;
  fs::recursive_directory_iterator it(
      dir, fs::directory_options::follow_directory_symlink, error);
  for (; !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    const fs::path relative = it->path().lexically_relative(dir);
    if (Hidden(relative)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() ||
        !IsAudioExtension(Lower(it->path().extension().string()))) {
      continue;
    }
    fs::path stem = relative;
    stem.replace_extension();
    found.push_back({it->path().string(), stem.string()});
  }
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list ", dir.string(), ": ", error.message()));
  }
  std::sort(
      found.begin(), found.end(),
      [](const BatchInput& a, const BatchInput& b) { return a.path < b.path; });
  out.insert(out.end(), found.begin(), found.end());
  return absl::OkStatus();
}

}  // namespace

bool IsAudioExtension(const std::string& extension) {
  static const char* const kExtensions[] = {".wav", ".flac", ".ogg",
                                            ".oga", ".opus", ".mp3"};
  for (const char* e : kExtensions) {
    if (extension == e) return true;
  }
  return false;
}

absl::StatusOr<std::vector<BatchInput>> ListBatchInputs(
    const std::vector<std::string>& args) {
  std::vector<BatchInput> inputs;
  for (const std::string& arg : args) {
    std::error_code error;
    const fs::file_status status = fs::status(arg, error);
    if (error || !fs::exists(status)) {
      return absl::InvalidArgumentError(
          absl::StrCat("no such file or folder: ", arg));
    }
    if (fs::is_directory(status)) {
      if (absl::Status s = AddDirectory(arg, inputs); !s.ok()) return s;
    } else {
      std::string stem = fs::path(arg).stem().string();
      if (stem.empty()) stem = "audio";
      inputs.push_back({arg, stem});
    }
  }
  if (inputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no audio files in the arguments (a folder is searched for .wav, "
        ".flac, .ogg, .oga, .opus and .mp3 files)"));
  }
  absl::flat_hash_map<std::string, const BatchInput*> by_output;
  for (const BatchInput& input : inputs) {
    auto [it, added] = by_output.emplace(input.output_stem, &input);
    if (!added) {
      return absl::InvalidArgumentError(
          absl::StrCat(it->second->path, " and ", input.path,
                       " would both be written to '", input.output_stem,
                       ".rttm'; give them in separate runs or rename one"));
    }
  }
  return inputs;
}

}  // namespace diarization::client
