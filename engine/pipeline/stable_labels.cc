#include "engine/pipeline/stable_labels.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <optional>

#include "engine/pipeline/identify.h"
#include "engine/pipeline/linear_sum_assignment.h"

namespace diarization::pipeline {
namespace {

// pyannote's label format, so a stream's first result reads as it would
// without tracking.
std::string SpeakerLabel(int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "SPEAKER_%02d", index);
  return buf;
}

// Seconds during which both speakers speak.
double OverlapSeconds(const StableLabels::Speech& a,
                      const StableLabels::Speech& b) {
  double total = 0.0;
  for (const auto& [a_start, a_end] : a) {
    for (const auto& [b_start, b_end] : b) {
      total +=
          std::max(0.0, std::min(a_end, b_end) - std::max(a_start, b_start));
    }
  }
  return total;
}

bool HasUsableCentroid(const std::vector<float>& c) {
  return CosineSimilarity(c, c).has_value();
}

}  // namespace

void StableLabels::MatchBySpeech(
    const std::vector<std::vector<float>>& centroids,
    const std::vector<Speech>& speech, const std::vector<int>& previous,
    std::vector<std::string>& labels, std::vector<int>& track_of) {
  if (speech.size() != centroids.size()) return;
  std::vector<int> rows, cols;
  for (size_t i = 0; i < centroids.size(); ++i) {
    if (labels[i].empty() && !HasUsableCentroid(centroids[i])) {
      rows.push_back(static_cast<int>(i));
    }
  }
  for (const int t : previous) {
    if (std::find(track_of.begin(), track_of.end(), t) == track_of.end()) {
      cols.push_back(t);
    }
  }
  const int n = static_cast<int>(rows.size());
  const int m = static_cast<int>(cols.size());
  if (n == 0 || m == 0) return;
  std::vector<double> weight(static_cast<size_t>(n) * m, 0.0);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < m; ++c) {
      weight[static_cast<size_t>(r) * m + c] =
          OverlapSeconds(speech[rows[r]], tracks_[cols[c]].speech);
    }
  }
  const std::vector<int> col_of_row = LinearSumAssignmentMax(weight, n, m);
  for (int r = 0; r < n; ++r) {
    const int c = col_of_row[r];
    if (c < 0 || weight[static_cast<size_t>(r) * m + c] <= 0.0) continue;
    labels[rows[r]] = tracks_[cols[c]].label;
    track_of[rows[r]] = cols[c];
  }
}

void StableLabels::Match(const std::vector<std::vector<float>>& centroids,
                         const std::vector<int>& candidates,
                         std::vector<std::string>& labels,
                         std::vector<int>& track_of) {
  std::vector<int> rows;
  for (size_t i = 0; i < centroids.size(); ++i) {
    if (labels[i].empty()) rows.push_back(static_cast<int>(i));
  }
  const int n = static_cast<int>(rows.size());
  const int m = static_cast<int>(candidates.size());
  if (n == 0 || m == 0) return;
  // As in IdentifySpeakers: maximize the sum of margins above the floor.
  std::vector<double> weight(static_cast<size_t>(n) * m, 0.0);
  std::vector<char> allowed(weight.size(), 0);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < m; ++c) {
      const std::optional<double> s =
          CosineSimilarity(centroids[rows[r]], tracks_[candidates[c]].centroid);
      if (s.has_value() && *s >= min_similarity_) {
        weight[static_cast<size_t>(r) * m + c] = *s - min_similarity_;
        allowed[static_cast<size_t>(r) * m + c] = 1;
      }
    }
  }
  const std::vector<int> col_of_row = LinearSumAssignmentMax(weight, n, m);
  for (int r = 0; r < n; ++r) {
    const int c = col_of_row[r];
    if (c < 0 || !allowed[static_cast<size_t>(r) * m + c]) continue;
    labels[rows[r]] = tracks_[candidates[c]].label;
    track_of[rows[r]] = candidates[c];
  }
}

std::vector<std::string> StableLabels::Next(
    const std::vector<std::vector<float>>& centroids,
    const std::vector<Speech>& speech) {
  std::vector<std::string> labels(centroids.size());
  std::vector<int> track_of(centroids.size(), -1);
  std::vector<int> previous, dormant;
  for (size_t t = 0; t < tracks_.size(); ++t) {
    (tracks_[t].in_previous ? previous : dormant)
        .push_back(static_cast<int>(t));
  }
  // The previous result's speakers first, then those seen earlier.
  Match(centroids, previous, labels, track_of);
  Match(centroids, dormant, labels, track_of);
  MatchBySpeech(centroids, speech, previous, labels, track_of);
  for (Track& t : tracks_) t.in_previous = false;
  for (size_t i = 0; i < centroids.size(); ++i) {
    if (labels[i].empty()) {
      labels[i] = SpeakerLabel(next_label_++);
      tracks_.push_back(Track{.label = labels[i]});
      track_of[i] = static_cast<int>(tracks_.size()) - 1;
    }
    Track& t = tracks_[track_of[i]];
    t.centroid = centroids[i];
    t.speech = speech.size() == centroids.size() ? speech[i] : Speech{};
    t.in_previous = true;
    t.last_seen = results_;
  }
  ++results_;
  // Forget the least recently seen dormant speakers beyond the bound.
  const int dormant_count =
      static_cast<int>(tracks_.size()) - static_cast<int>(centroids.size());
  if (dormant_count > kMaxDormantSpeakers) {
    std::stable_sort(tracks_.begin(), tracks_.end(),
                     [](const Track& a, const Track& b) {
                       return a.last_seen > b.last_seen;
                     });
    tracks_.resize(centroids.size() + kMaxDormantSpeakers);
  }
  return labels;
}

}  // namespace diarization::pipeline
