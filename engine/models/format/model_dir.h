// A model directory: everything the service loads at start-up.
//
//   <dir>/manifest.json              names, sources, SHA-256 of every file and
//                                    tensor (engine/models/format/manifest.h)
//   <dir>/segmentation.safetensors   PyanNet state_dict (model_specs.h)
//   <dir>/embedding.safetensors      WeSpeakerResNet34 state_dict
//   <dir>/plda/xvec_transform.npz    pyannote's files, copied unchanged
//   <dir>/plda/plda.npz
//
// Made by tools/make_random_models (deterministic random weights) or
// tools/convert (real pyannote checkpoints). Opening checks the manifest, the
// file hashes, and that both networks hold exactly the tensors pyannote's
// modules have, so a wrong or damaged directory fails at start-up, not
// mid-request. The object is immutable once opened and can be shared.
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_DIR_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_DIR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/format/manifest.h"
#include "engine/models/format/safetensors.h"

namespace diarization::models {

inline constexpr char kManifestFileName[] = "manifest.json";
inline constexpr char kSegmentationFileName[] = "segmentation.safetensors";
inline constexpr char kEmbeddingFileName[] = "embedding.safetensors";
inline constexpr char kXvecTransformFileName[] = "plda/xvec_transform.npz";
inline constexpr char kPldaFileName[] = "plda/plda.npz";
inline constexpr char kSegmentationArchitecture[] = "PyanNet";
inline constexpr char kEmbeddingArchitecture[] = "WeSpeakerResNet34";
inline constexpr char kPldaArchitecture[] = "VBx-PLDA";

// What GetInfo reports about one model.
struct ModelSummary {
  std::string name;
  std::string architecture;
  std::string precision;  // Default precision; empty for the PLDA.
  bool random_weights = false;
  std::string source;
  std::vector<ManifestFile> files;  // Paths relative to the directory.
};

struct ModelDirectorySummary {
  std::string dir;
  int format_version = 0;
  ModelSummary segmentation;
  ModelSummary embedding;
  ModelSummary plda;
};

class ModelDirectory {
 public:
  struct Options {
    // Hash every file and tensor against the manifest (about 0.1 s for the
    // community-1 models). Off only for tools that inspect broken folders.
    bool verify_hashes = true;
  };

  // NotFound: no directory, manifest or listed file. InvalidArgument: bad
  // manifest, or tensors that do not match pyannote's modules (every
  // problem listed). DataLoss: a file or tensor whose size or SHA-256
  // differs from the manifest, or a corrupt safetensors file.
  static absl::StatusOr<std::unique_ptr<ModelDirectory>> Open(
      const std::string& dir, const Options& options);
  static absl::StatusOr<std::unique_ptr<ModelDirectory>> Open(
      const std::string& dir) {
    return Open(dir, Options());
  }

  const SafetensorsFile& segmentation() const { return *segmentation_; }
  const SafetensorsFile& embedding() const { return *embedding_; }
  // <dir>/plda: holds xvec_transform.npz and plda.npz.
  std::string plda_dir() const;
  std::string xvec_transform_path() const;
  std::string plda_path() const;
  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  ModelDirectorySummary summary() const;

 private:
  ModelDirectory() = default;
  std::string dir_;
  Manifest manifest_;
  std::unique_ptr<SafetensorsFile> segmentation_;
  std::unique_ptr<SafetensorsFile> embedding_;
};

// Everything needed to write a model directory. In the three ManifestModel
// entries only name, architecture, precision, random_weights and source are
// used; files and tensors (with hashes) are filled in by the writer.
struct ModelDirectoryContents {
  std::vector<TensorData> segmentation;
  std::vector<TensorData> embedding;
  std::string plda_source_dir;  // Holds xvec_transform.npz and plda.npz.
  ManifestModel segmentation_info;
  ManifestModel embedding_info;
  ManifestModel plda_info;
};

// Writes <dir> (created if needed; existing files of the format replaced).
// The tensors must match PyanNetTensorSpecs() / ResNet34TensorSpecs() by
// name, dtype and shape; they are stored in that order. The manifest is
// written last, so a directory with a manifest is complete.
absl::Status WriteModelDirectory(const std::string& dir,
                                 const ModelDirectoryContents& contents);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_MODEL_DIR_H_
