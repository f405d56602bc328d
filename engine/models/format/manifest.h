// The manifest of a model directory (<dir>/manifest.json): what each model
// is, where its files are, their SHA-256 hashes and, for the networks, every
// tensor's name, dtype, shape and hash. See docs/models.md for the format.
//
//   {"format": "diarization-models", "format_version": 1,
//    "segmentation": {"name": ..., "architecture": "PyanNet",
//                     "files": [{"path": "segmentation.safetensors",
//                                "sha256": ..., "bytes": N}],
//                     "tensors": [{"name": ..., "dtype": "F32",
//                                  "shape": [..], "sha256": ...}, ...],
//                     "precision": "fp32", "random_weights": false,
//                     "source": "..."},
//    "embedding": {... "architecture": "WeSpeakerResNet34" ...},
//    "plda": {"name": ..., "files": [{"path": "plda/xvec_transform.npz", ..},
//                                    {"path": "plda/plda.npz", ..}],
//             "random_weights": false, "source": "..."}}
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_MANIFEST_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_MANIFEST_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/common/sha256.h"
#include "engine/models/format/safetensors.h"

namespace diarization::models {

inline constexpr char kManifestFormat[] = "diarization-models";
inline constexpr int kManifestFormatVersion = 1;

struct ManifestFile {
  std::string path;    // Relative to the model directory, '/'-separated.
  std::string sha256;  // Lower-case hex.
  int64_t bytes = 0;
};

struct ManifestTensor {
  TensorSpec spec;
  std::string sha256;  // Of the tensor's raw little-endian bytes.
};

struct ManifestModel {
  std::string name;          // e.g. "pyannote/segmentation-3.0".
  std::string architecture;  // "PyanNet", "WeSpeakerResNet34", "VBx-PLDA".
  std::vector<ManifestFile> files;
  std::vector<ManifestTensor> tensors;  // Empty for the PLDA.
  std::string precision;                // "fp32" | "tf32"; empty for PLDA.
  bool random_weights = false;
  std::string source;  // Free text: where the weights came from.
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  ManifestModel segmentation;
  ManifestModel embedding;
  ManifestModel plda;
};

// Parses manifest.json text. InvalidArgument names the missing or malformed
// field (e.g. "embedding.files[0].sha256").
absl::StatusOr<Manifest> ParseManifest(const std::string& json_text);

// Deterministic JSON (2-space indent, keys sorted) ending in a newline.
std::string SerializeManifest(const Manifest& manifest);

// Lower-case hex SHA-256 of bytes / of a whole file (engine/common).
using ::diarization::Sha256Hex;
using ::diarization::Sha256HexOfFile;

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_MANIFEST_H_
