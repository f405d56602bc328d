#include "engine/pipeline/speaker_labeler.h"

#include <cstddef>
#include <map>
#include <utility>

namespace diarization::pipeline {

SpeakerLabeler::SpeakerLabeler(std::vector<KnownSpeaker> known,
                               double threshold, bool stable_labels)
    : known_(std::move(known)), threshold_(threshold) {
  if (stable_labels) stable_.emplace();
}

std::vector<LabelledSpeaker> SpeakerLabeler::Apply(
    const std::vector<std::string>& labels,
    const std::vector<std::vector<float>>& centroids,
    std::initializer_list<std::vector<Segment>*> segment_lists) {
  // A speaker without a centroid (there should be none) is scored as an
  // all-zero one: never matched.
  std::vector<std::vector<float>> rows(labels.size());
  for (size_t i = 0; i < labels.size() && i < centroids.size(); ++i) {
    rows[i] = centroids[i];
  }
  const std::vector<SpeakerIdentity> identities =
      IdentifySpeakers(rows, known_, threshold_);
  std::vector<std::string> base = labels;
  if (stable_.has_value()) {
    // Each speaker's turns, from the first segment list (the regular view),
    // for the speakers whose centroid cannot be tracked.
    std::vector<StableLabels::Speech> speech(labels.size());
    if (segment_lists.size() > 0) {
      std::map<std::string, size_t> index;
      for (size_t i = 0; i < labels.size(); ++i) index[labels[i]] = i;
      for (const Segment& s : **segment_lists.begin()) {
        const auto it = index.find(s.speaker);
        if (it != index.end())
          speech[it->second].emplace_back(s.start_s, s.end_s);
      }
    }
    base = stable_->Next(rows, speech);
  }
  std::vector<LabelledSpeaker> out(labels.size());
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < labels.size(); ++i) {
    out[i].identity = identities[i];
    out[i].label = identities[i].matched_label.empty()
                       ? std::move(base[i])
                       : identities[i].matched_label;
    if (out[i].label != labels[i]) rename[labels[i]] = out[i].label;
  }
  if (!rename.empty()) {
    for (std::vector<Segment>* segments : segment_lists) {
      for (Segment& s : *segments) {
        const auto it = rename.find(s.speaker);
        if (it != rename.end()) s.speaker = it->second;
      }
    }
  }
  return out;
}

}  // namespace diarization::pipeline
