// Speaker labels that stay put while a stream runs. Each provisional result
// re-clusters the audio so far, and its labels (pyannote's SPEAKER_00, ...,
// numbered by first appearance in that clustering) say nothing about the
// previous result's. StableLabels matches each result's speakers to the
// previous result's by centroid, one-to-one, and hands out labels:
//   - a speaker matched to one of the previous result's keeps its label;
//   - else, one matched to a speaker seen earlier but absent from the
//     previous result (merged away for a while) gets that label back;
//   - else it gets a label never used before in this stream.
// A label is never given to a speaker that did not match its owner, so a
// vanished speaker's label is not reused by a new one. A speaker whose
// centroid is all zero (pyannote gives those to speakers with no clean
// embedding) cannot be matched by centroid; it is matched instead, one-to-one,
// to the previous result's not yet matched speaker whose speech overlaps its
// own the most (a result covers the audio so far, so a speaker's earlier turns
// are in both), and gets a fresh label only when nothing overlaps.
#ifndef DIARIZATION_ENGINE_PIPELINE_STABLE_LABELS_H_
#define DIARIZATION_ENGINE_PIPELINE_STABLE_LABELS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace diarization::pipeline {

// Two centroids of one stream at or above this cosine similarity may be the
// same speaker. Centroids of successive results of one speaker are means of
// mostly the same embeddings, so they score near 1; the floor only keeps a
// new speaker from inheriting a vanished one's label.
inline constexpr double kDefaultTrackingSimilarity = 0.5;

// At most this many speakers absent from the previous result are remembered
// (the least recently seen are forgotten first), so a long stream whose
// clustering keeps changing holds bounded memory and matching work. A
// forgotten speaker's label is still never handed out again.
inline constexpr int kMaxDormantSpeakers = 128;

// Not thread-safe: one per stream, called once per result, in order.
class StableLabels {
 public:
  explicit StableLabels(double min_similarity = kDefaultTrackingSimilarity)
      : min_similarity_(min_similarity) {}

  // A speaker's turns in one result: [start_s, end_s) pairs, seconds.
  using Speech = std::vector<std::pair<double, double>>;

  // The stable label of each speaker of the next result, given its
  // centroids (one per speaker, in the result's label order) and, optionally,
  // each speaker's turns (same order; used only for speakers without a
  // usable centroid).
  std::vector<std::string> Next(
      const std::vector<std::vector<float>>& centroids,
      const std::vector<Speech>& speech = {});

  // Labels handed out so far (for tests and logs).
  int labels_used() const { return next_label_; }
  // Speakers remembered now (the previous result's and dormant ones).
  int speakers_remembered() const { return static_cast<int>(tracks_.size()); }

 private:
  struct Track {
    std::string label;
    std::vector<float> centroid;  // the latest one
    Speech speech;                // its turns in the latest result
    bool in_previous = false;     // present in the previous result
    int64_t last_seen = 0;        // the result it was last in
  };
  // Matches the unlabelled speakers to the tracks `candidates` (indices
  // into tracks_), one-to-one, writing labels and track indices.
  void Match(const std::vector<std::vector<float>>& centroids,
             const std::vector<int>& candidates,
             std::vector<std::string>& labels, std::vector<int>& track_of);
  // Matches the unlabelled speakers without a usable centroid to the
  // previous result's tracks not yet taken, by overlapping speech.
  void MatchBySpeech(const std::vector<std::vector<float>>& centroids,
                     const std::vector<Speech>& speech,
                     const std::vector<int>& previous,
                     std::vector<std::string>& labels,
                     std::vector<int>& track_of);

  double min_similarity_;
  std::vector<Track> tracks_;
  int next_label_ = 0;
  int64_t results_ = 0;
};

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_STABLE_LABELS_H_
