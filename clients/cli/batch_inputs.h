// The inputs of a batch (diarize_client --out_dir DIR FILE|DIR ...): which
// files, and where each one's outputs go.
#ifndef DIARIZATION_CLIENTS_CLI_BATCH_INPUTS_H_
#define DIARIZATION_CLIENTS_CLI_BATCH_INPUTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::client {

struct BatchInput {
  std::string path;
  // The outputs' path without extension, relative to the output folder:
  // the file's stem for a FILE argument; for a file found under a DIR
  // argument, its path below DIR without extension (so that a/x.wav and
  // b/x.wav do not collide).
  std::string output_stem;
};

// The audio file extensions taken from a DIR argument (lower case, with the
// dot); a FILE argument is taken whatever its name.
bool IsAudioExtension(const std::string& extension);

// Expands the arguments in order: a FILE as itself, a DIR as the audio files
// below it (recursively, sorted by path, hidden files and folders skipped).
// INVALID_ARGUMENT for an argument that does not exist, for no input at
// all, or for two inputs with the same output (naming both).
absl::StatusOr<std::vector<BatchInput>> ListBatchInputs(
    const std::vector<std::string>& args);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_BATCH_INPUTS_H_
