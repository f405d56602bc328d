// Loads the network outputs a host-pipeline run starts from: pyannote's
// recorded segmentations (C × 589 × 3) and raw embeddings (C × 3 × 256).
//
// Layouts (../shared/specs/fixtures.md):
// - findit-dia-parity: DIR/segmentations.npz ("segmentations") and
//   DIR/raw_embeddings.npz ("embeddings"); a single-member archive is also
//   accepted whatever its key.
// - speakrs: DIR/P_segmentation_data.npy and DIR/P_embeddings_data.npy.
#ifndef DIARIZATION_ENGINE_IO_FIXTURE_H_
#define DIARIZATION_ENGINE_IO_FIXTURE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::io {

struct PipelineInputs {
  int num_windows = 0;
  std::vector<float> segmentations;  // (C × 589 × 3)
  std::vector<float> embeddings;     // (C × 3 × 256)
  // RTTM uri: reference.rttm's, else "clip_16k" when clip_16k.wav is there,
  // else the folder name (findit layout only).
  std::string uri;
};

absl::StatusOr<PipelineInputs> LoadFinditFixture(const std::string& dir);

absl::StatusOr<PipelineInputs> LoadSpeakrsScenario(const std::string& dir,
                                                   const std::string& prefix);

}  // namespace diarization::io

#endif  // DIARIZATION_ENGINE_IO_FIXTURE_H_
