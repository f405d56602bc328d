// One loaded model as the service describes it (GetInfo), from the model
// directory's manifest: the devices carry it (LoadedDevices::models), so the
// server needs no engine/models type to describe what it serves.
#ifndef DIARIZATION_ENGINE_RUNTIME_LOADED_MODEL_H_
#define DIARIZATION_ENGINE_RUNTIME_LOADED_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace diarization::runtime {

struct LoadedModel {
  std::string role;  // "segmentation", "embedding" or "plda"
  std::string name;
  std::string architecture;
  std::string precision;  // The default precision; empty for the PLDA.
  bool random_weights = false;
  std::string source;
  struct File {
    std::string path;    // Relative to the model directory.
    std::string sha256;  // Lower-case hex.
    int64_t bytes = 0;
  };
  std::vector<File> files;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_LOADED_MODEL_H_
