#include "engine/io/fixture.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/shapes.h"
#include "engine/common/status_macros.h"
#include "engine/io/npy.h"
#include "engine/pipeline/rttm.h"

namespace diarization::io {
namespace {

absl::StatusOr<NpyArray> PickMember(const std::string& path,
                                    const std::string& key) {
  ASSIGN_OR_RETURN(auto members, ReadNpzFile(path));
  auto it = members.find(key);
  if (it != members.end()) return std::move(it->second);
  if (members.size() == 1) return std::move(members.begin()->second);
  return absl::InvalidArgumentError(absl::StrCat(
      path, " has no '", key, "' array (and more than one member)"));
}

absl::StatusOr<PipelineInputs> Check(const NpyArray& seg, const NpyArray& emb,
                                     const std::string& where) {
  if (seg.shape.size() != 3 || seg.shape[1] != kFramesPerWindow ||
      seg.shape[2] != kLocalSpeakers) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": segmentations must have shape (C, ",
                     kFramesPerWindow, ", ", kLocalSpeakers, ")"));
  }
  const int64_t c = seg.shape[0];
  if (emb.shape.size() != 3 || emb.shape[0] != c ||
      emb.shape[1] != kLocalSpeakers || emb.shape[2] != kEmbeddingDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": embeddings must have shape (", c, ", ", kLocalSpeakers, ", ",
        kEmbeddingDim, ") to match the ", c, " segmentation windows"));
  }
  if (c == 0)
    return absl::InvalidArgumentError(absl::StrCat(where, ": zero windows"));
  PipelineInputs in;
  in.num_windows = static_cast<int>(c);
  in.segmentations = seg.ToFloat();
  in.embeddings = emb.ToFloat();
  return in;
}

}  // namespace

absl::StatusOr<PipelineInputs> LoadFinditFixture(const std::string& dir) {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(const NpyArray seg,
                   PickMember(dir + "/segmentations.npz", "segmentations"));
  ASSIGN_OR_RETURN(const NpyArray emb,
                   PickMember(dir + "/raw_embeddings.npz", "embeddings"));
  ASSIGN_OR_RETURN(PipelineInputs in, Check(seg, emb, dir));
  const std::string reference = dir + "/reference.rttm";
  if (fs::exists(reference)) {
    auto segments = ReadRttmFile(reference);
    if (segments.ok() && !segments->empty()) in.uri = segments->front().uri;
  }
  if (in.uri.empty() && fs::exists(dir + "/clip_16k.wav")) in.uri = "clip_16k";
  if (in.uri.empty()) {
    in.uri = fs::path(dir).lexically_normal().filename().string();
    if (in.uri.empty())
      in.uri =
          fs::path(dir).lexically_normal().parent_path().filename().string();
  }
  return in;
}

absl::StatusOr<PipelineInputs> LoadSpeakrsScenario(const std::string& dir,
                                                   const std::string& prefix) {
  ASSIGN_OR_RETURN(
      const NpyArray seg,
      ReadNpyFile(absl::StrCat(dir, "/", prefix, "_segmentation_data.npy")));
  ASSIGN_OR_RETURN(
      const NpyArray emb,
      ReadNpyFile(absl::StrCat(dir, "/", prefix, "_embeddings_data.npy")));
  ASSIGN_OR_RETURN(PipelineInputs in,
                   Check(seg, emb, absl::StrCat(dir, "/", prefix)));
  in.uri = prefix;
  return in;
}

}  // namespace diarization::io
