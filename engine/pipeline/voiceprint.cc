#include "engine/pipeline/voiceprint.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace diarization::pipeline {

absl::StatusOr<VoiceprintEmbedding> DominantSpeakerVoiceprint(
    const std::vector<Segment>& exclusive_segments,
    const std::vector<std::string>& labels,
    const std::vector<std::vector<float>>& centroids,
    const VoiceprintRules& rules) {
  std::map<std::string, double> speech;
  double total = 0.0;
  for (const Segment& s : exclusive_segments) {
    const double d = std::max(0.0, s.end_s - s.start_s);
    speech[s.speaker] += d;
    total += d;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [label, seconds] : speech)
    ranked.push_back({seconds, label});
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.empty() || ranked[0].first < rules.min_speech_s) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "too little speech for a voiceprint: %.2f s found, at least %.2f s "
        "of one speaker are needed",
        ranked.empty() ? 0.0 : ranked[0].first, rules.min_speech_s));
  }
  const double share = ranked[0].first / total;
  if (share < rules.min_dominant_share) {
    std::string who;
    for (size_t i = 0; i < ranked.size() && i < 4; ++i) {
      absl::StrAppend(
          &who, i ? ", " : "",
          absl::StrFormat("%s %.2f s", ranked[i].second, ranked[i].first));
    }
    return absl::FailedPreconditionError(absl::StrFormat(
        "no single dominant speaker: the most talkative has %.0f%% of the "
        "%.2f s of speech (%s); a voiceprint needs one speaker with at "
        "least %.0f%%: select their speech with `speech` time ranges",
        100 * share, total, who, 100 * rules.min_dominant_share));
  }
  const auto it = std::find(labels.begin(), labels.end(), ranked[0].second);
  const size_t index = static_cast<size_t>(it - labels.begin());
  if (it == labels.end() || index >= centroids.size() ||
      std::all_of(centroids[index].begin(), centroids[index].end(),
                  [](float v) { return v == 0.0f; })) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the dominant speaker (%.2f s of speech) has no clean speech to "
        "embed (no window where they speak alone); send a longer recording",
        ranked[0].first));
  }
  return VoiceprintEmbedding{centroids[index], ranked[0].first};
}

}  // namespace diarization::pipeline
