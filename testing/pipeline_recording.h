// pyannote's whole-pipeline recordings (testing/testdata/pipeline_*, made by
// tools/reference/record_pipeline.py; testing/testdata/README.md): per clip
// the network outputs pyannote's SpeakerDiarization computed
// (arrays.safetensors) and the RTTMs it wrote from them. The host pipeline's
// parity tests read the network outputs through this reader, so they need no
// engine/models target (the never [Pipeline, Models]).
#ifndef DIARIZATION_TESTING_PIPELINE_RECORDING_H_
#define DIARIZATION_TESTING_PIPELINE_RECORDING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::testing {

// The folder of one recording, e.g. "pipeline_random_seed1":
// SourceRoot()/testing/testdata/<name> (no trailing slash).
std::string PipelineRecordingDir(const std::string& name);

// What pyannote's networks gave for one clip, as the host pipeline takes it.
struct RecordedNetworkOutputs {
  int num_windows = 0;
  // (num_windows, 589, 3): the binarised segmentation, 0 or 1 (recorded U8).
  std::vector<float> segmentations;
  // As recorded (F32, (num_windows, 3, 256) when the recording is sound; the
  // callers check the size): NaN for the speakers pyannote skipped.
  std::vector<float> embeddings;
};

// Reads `<clip>.segmentations` and `<clip>.embeddings` from
// `<dir>/arrays.safetensors`. Errors name the file and the tensor: the file
// cannot be opened, a tensor is missing, or its dtype or rank is not the
// recorded one (segmentations U8 of rank 3, embeddings F32).
absl::StatusOr<RecordedNetworkOutputs> ReadRecordedNetworkOutputs(
    const std::string& dir, const std::string& clip);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_PIPELINE_RECORDING_H_
