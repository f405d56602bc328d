// The labels a client sees, put on a diarization's output after the
// pipeline: known-speaker identification (identify.h) and, for a stream
// with provisional results, labels stable across them (stable_labels.h).
// A speaker matched to a known speaker carries the known label; any other
// keeps pyannote's label, or, with stable labels, its stream-stable one.
// With neither (no known speakers, no partials) nothing is renamed, so the
// output is pyannote's, byte for byte.
#ifndef DIARIZATION_ENGINE_PIPELINE_SPEAKER_LABELER_H_
#define DIARIZATION_ENGINE_PIPELINE_SPEAKER_LABELER_H_

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "engine/pipeline/identify.h"
#include "engine/pipeline/segment.h"
#include "engine/pipeline/stable_labels.h"

namespace diarization::pipeline {

// One output speaker of a relabelled result.
struct LabelledSpeaker {
  // The label it carries now (known, stable or pyannote's).
  std::string label;
  SpeakerIdentity identity;
};

// Not thread-safe: one per call, applied to its results in order.
class SpeakerLabeler {
 public:
  SpeakerLabeler(std::vector<KnownSpeaker> known, double threshold,
                 bool stable_labels);

  // Renames the speakers of one result in place. `labels` and `centroids`
  // are the result's (DiarizationOutput::labels / centroids, one centroid
  // per label); every segment list's speakers are renamed accordingly (a
  // segment whose label is not in `labels` is left alone). Segment order
  // is kept. Returns one entry per label, in `labels`' order.
  std::vector<LabelledSpeaker> Apply(
      const std::vector<std::string>& labels,
      const std::vector<std::vector<float>>& centroids,
      std::initializer_list<std::vector<Segment>*> segment_lists);

  bool has_known_speakers() const { return !known_.empty(); }

 private:
  std::vector<KnownSpeaker> known_;
  double threshold_;
  std::optional<StableLabels> stable_;
};

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SPEAKER_LABELER_H_
