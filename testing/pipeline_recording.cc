#include "testing/pipeline_recording.h"

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/models/format/safetensors.h"
#include "testing/test_data.h"

namespace diarization::testing {

std::string PipelineRecordingDir(const std::string& name) {
  return SourceRoot() + "/testing/testdata/" + name;
}

absl::StatusOr<RecordedNetworkOutputs> ReadRecordedNetworkOutputs(
    const std::string& dir, const std::string& clip) {
  const std::string path = dir + "/arrays.safetensors";
  absl::StatusOr<std::unique_ptr<models::SafetensorsFile>> file =
      models::SafetensorsFile::Open(path);
  if (!file.ok()) return file.status();
  const models::TensorView* seg = (*file)->Find(clip + ".segmentations");
  const models::TensorView* emb = (*file)->Find(clip + ".embeddings");
  if (seg == nullptr || emb == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path, ": no tensor ", clip,
                     seg == nullptr ? ".segmentations" : ".embeddings"));
  }
  if (seg->dtype != models::DType::kU8 || seg->shape.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", clip,
        ".segmentations must be U8 of rank 3 (windows, frames, speakers), "
        "as record_pipeline.py writes it"));
  }
  if (emb->dtype != models::DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", clip, ".embeddings must be F32"));
  }
  RecordedNetworkOutputs out;
  out.num_windows = static_cast<int>(seg->shape[0]);
  out.segmentations.resize(seg->num_elements());
  for (size_t i = 0; i < out.segmentations.size(); ++i) {
    out.segmentations[i] =
        static_cast<float>(static_cast<uint8_t>(seg->bytes[i]));
  }
  const std::span<const float> embeddings = emb->f32();
  out.embeddings.assign(embeddings.begin(), embeddings.end());
  return out;
}

}  // namespace diarization::testing
