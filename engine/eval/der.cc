#include "engine/eval/der.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/eval/hungarian.h"

namespace diarization::eval {
namespace {

// pyannote.core's SEGMENT_PRECISION: a segment no longer than this is empty,
// and two segments intersect only when they share more than this.
constexpr double kSegmentPrecision = 1e-6;

bool NonEmpty(double start, double end) {
  return end - start > kSegmentPrecision;
}

// One track of an annotation: a time span and a speaker index.
struct Track {
  double start = 0.0;
  double end = 0.0;
  int speaker = 0;
};

bool ByStartEnd(const Interval& a, const Interval& b) {
  return a.start_s < b.start_s || (a.start_s == b.start_s && a.end_s < b.end_s);
}

// Timeline.support(): union of the segments, merging across gaps that are
// empty (<= 1 µs).
std::vector<Interval> Support(std::vector<Interval> segments) {
  std::erase_if(segments, [](const Interval& s) {
    return !NonEmpty(s.start_s, s.end_s);
  });
  std::sort(segments.begin(), segments.end(), ByStartEnd);
  std::vector<Interval> merged;
  for (const Interval& s : segments) {
    if (!merged.empty() && !NonEmpty(merged.back().end_s, s.start_s)) {
      merged.back().end_s = std::max(merged.back().end_s, s.end_s);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

// Timeline(removed).support().gaps(support=uem): the parts of `uem` not
// covered by `removed` (UEMSupportMixin.extrude).
std::vector<Interval> Extrude(const std::vector<Interval>& uem,
                              const std::vector<Interval>& removed) {
  const std::vector<Interval> removed_support = Support(removed);
  std::vector<Interval> kept;
  for (const Interval& region : Support(uem)) {
    std::vector<Interval> inside;
    for (const Interval& r : removed_support) {
      const double start = std::max(r.start_s, region.start_s);
      const double end = std::min(r.end_s, region.end_s);
      if (NonEmpty(start, end)) inside.push_back({start, end});
    }
    double end = region.start_s;
    for (const Interval& r : Support(std::move(inside))) {
      if (NonEmpty(end, r.start_s)) kept.push_back({end, r.start_s});
      end = r.end_s;
    }
    if (NonEmpty(end, region.end_s)) kept.push_back({end, region.end_s});
  }
  return kept;
}

// Annotation.crop(uem, mode="intersection").
std::vector<Track> Crop(const std::vector<Track>& tracks,
                        const std::vector<Interval>& uem) {
  const std::vector<Interval> support = Support(uem);
  std::vector<Track> cropped;
  for (const Track& t : tracks) {
    for (const Interval& region : support) {
      const double start = std::max(t.start, region.start_s);
      const double end = std::min(t.end, region.end_s);
      if (NonEmpty(start, end)) cropped.push_back({start, end, t.speaker});
    }
  }
  return cropped;
}

absl::Status CheckSegments(const std::vector<Segment>& segments,
                           const char* side) {
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (!std::isfinite(s.start_s) || !std::isfinite(s.end_s)) {
      return absl::InvalidArgumentError(
          absl::StrCat(side, " segment ", i, " has a non-finite time"));
    }
    if (s.end_s < s.start_s) {
      return absl::InvalidArgumentError(
          absl::StrCat(side, " segment ", i, " ends (", s.end_s,
                       " s) before it starts (", s.start_s, " s)"));
    }
  }
  return absl::OkStatus();
}

// Non-empty segments as tracks, speakers numbered in order of first
// appearance (`names` collects the labels).
std::vector<Track> ToTracks(const std::vector<Segment>& segments,
                            std::map<std::string, int>& names) {
  std::vector<Track> tracks;
  for (const Segment& s : segments) {
    // pyannote's Annotation drops empty segments when they are added.
    if (!NonEmpty(s.start_s, s.end_s)) continue;
    auto [it, inserted] =
        names.emplace(s.speaker, static_cast<int>(names.size()));
    tracks.push_back({s.start_s, s.end_s, it->second});
  }
  return tracks;
}

// Extent of a set of tracks (Timeline.extent()), empty if none.
Interval Extent(const std::vector<Track>& tracks) {
  if (tracks.empty()) return {0.0, 0.0};
  Interval extent{tracks[0].start, tracks[0].end};
  for (const Track& t : tracks) {
    extent.start_s = std::min(extent.start_s, t.start);
    extent.end_s = std::max(extent.end_s, t.end);
  }
  return extent;
}

}  // namespace

double DerComponents::der() const {
  const double error = confusion_s + false_alarm_s + missed_s;
  if (total_s == 0.0) return error == 0.0 ? 0.0 : 1.0;
  return error / total_s;
}

DerComponents& DerComponents::operator+=(const DerComponents& other) {
  total_s += other.total_s;
  correct_s += other.correct_s;
  missed_s += other.missed_s;
  false_alarm_s += other.false_alarm_s;
  confusion_s += other.confusion_s;
  return *this;
}

absl::StatusOr<DerComponents> ComputeDer(const std::vector<Segment>& reference,
                                         const std::vector<Segment>& hypothesis,
                                         const DerOptions& options,
                                         const std::vector<Interval>* uem) {
  if (!std::isfinite(options.collar_s) || options.collar_s < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("collar must be a non-negative number of seconds, got ",
                     options.collar_s));
  }
  RETURN_IF_ERROR(CheckSegments(reference, "reference"));
  RETURN_IF_ERROR(CheckSegments(hypothesis, "hypothesis"));
  std::map<std::string, int> reference_names, hypothesis_names;
  const std::vector<Track> ref = ToTracks(reference, reference_names);
  const std::vector<Track> hyp = ToTracks(hypothesis, hypothesis_names);
  const int ref_speakers = static_cast<int>(reference_names.size());
  const int hyp_speakers = static_cast<int>(hypothesis_names.size());

  // 1. The evaluated region.
  std::vector<Interval> evaluated;
  if (uem != nullptr) {
    evaluated = *uem;
  } else {
    // Segment union (`|`) of both extents; an empty extent is ignored.
    const Interval r = Extent(ref);
    const Interval h = Extent(hyp);
    Interval extent = r;
    if (!NonEmpty(r.start_s, r.end_s)) {
      extent = h;
    } else if (NonEmpty(h.start_s, h.end_s)) {
      extent = {std::min(r.start_s, h.start_s), std::max(r.end_s, h.end_s)};
    }
    if (NonEmpty(extent.start_s, extent.end_s)) evaluated.push_back(extent);
  }

  // 2. Collars and (optionally) reference overlap, from the uncropped
  // reference.
  if (options.collar_s > 0.0 || options.skip_overlap) {
    std::vector<Interval> removed;
    if (options.collar_s > 0.0) {
      const double half = 0.5 * options.collar_s;
      for (const Track& t : ref) {
        removed.push_back({t.start - half, t.start + half});
        removed.push_back({t.end - half, t.end + half});
      }
    }
    if (options.skip_overlap) {
      for (size_t i = 0; i < ref.size(); ++i) {
        for (size_t j = i + 1; j < ref.size(); ++j) {
          const double start = std::max(ref[i].start, ref[j].start);
          const double end = std::min(ref[i].end, ref[j].end);
          if (NonEmpty(start, end)) removed.push_back({start, end});
        }
      }
    }
    evaluated = Extrude(evaluated, removed);
  }

  // 3. Crop both sides.
  const std::vector<Track> ref_cropped = Crop(ref, evaluated);
  const std::vector<Track> hyp_cropped = Crop(hyp, evaluated);

  // 4. Optimal mapping on the co-occurrence of the cropped annotations
  // (HungarianMapper: Annotation.__mul__, linear_sum_assignment).
  std::vector<std::vector<double>> cooccurrence(
      hyp_speakers, std::vector<double>(ref_speakers, 0.0));
  for (const Track& h : hyp_cropped) {
    for (const Track& r : ref_cropped) {
      const double start = std::max(h.start, r.start);
      const double end = std::min(h.end, r.end);
      if (NonEmpty(start, end))
        cooccurrence[h.speaker][r.speaker] += end - start;
    }
  }
  std::vector<int> mapping = MaximumWeightAssignment(cooccurrence);
  for (int h = 0; h < hyp_speakers; ++h) {
    // Only pairs that co-occur are mapped.
    if (mapping[h] >= 0 && !(cooccurrence[h][mapping[h]] > 0.0)) {
      mapping[h] = -1;
    }
  }

  // 5. Common segmentation of both (Timeline.segmentation()) and the
  // per-piece counts (IdentificationErrorRate.compute_components).
  std::vector<Interval> all;
  std::set<double> timestamps;
  for (const std::vector<Track>* side : {&ref_cropped, &hyp_cropped}) {
    for (const Track& t : *side) {
      all.push_back({t.start, t.end});
      timestamps.insert(t.start);
      timestamps.insert(t.end);
    }
  }
  const std::vector<Interval> covered = Support(all);
  std::vector<Interval> pieces;
  {
    auto it = timestamps.begin();
    double start = timestamps.empty() ? 0.0 : *it;
    size_t cover = 0;
    if (!timestamps.empty()) ++it;
    for (; it != timestamps.end(); ++it) {
      const double end = *it;
      const double middle = 0.5 * (start + end);
      while (cover < covered.size() && covered[cover].end_s < middle) ++cover;
      if (NonEmpty(start, end) && cover < covered.size() &&
          covered[cover].start_s <= middle && middle <= covered[cover].end_s) {
        pieces.push_back({start, end});
      }
      start = end;
    }
  }
  // Tracks per piece: every boundary is a timestamp, so a track covers
  // exactly the pieces inside it.
  const size_t n_pieces = pieces.size();
  std::vector<std::vector<int>> ref_on(n_pieces), hyp_on(n_pieces);
  auto assign = [&](const std::vector<Track>& tracks,
                    std::vector<std::vector<int>>& on, bool is_hypothesis) {
    for (const Track& t : tracks) {
      auto first = std::lower_bound(
          pieces.begin(), pieces.end(), t.start,
          [](const Interval& p, double v) { return p.start_s < v; });
      for (auto p = first; p != pieces.end() && p->end_s <= t.end; ++p) {
        on[p - pieces.begin()].push_back(
            is_hypothesis ? (mapping[t.speaker] >= 0 ? mapping[t.speaker]
                                                     : -1 - t.speaker)
                          : t.speaker);
      }
    }
  };
  assign(ref_cropped, ref_on, false);
  assign(hyp_cropped, hyp_on, true);

  DerComponents components;
  std::vector<int> ref_count(ref_speakers, 0);
  for (size_t p = 0; p < n_pieces; ++p) {
    const double duration = pieces[p].end_s - pieces[p].start_s;
    const int n_ref = static_cast<int>(ref_on[p].size());
    const int n_hyp = static_cast<int>(hyp_on[p].size());
    // Matched tracks: pyannote's LabelMatcher maximises exact label matches,
    // which is the sum over speakers of min(count in ref, count in hyp).
    for (int s : ref_on[p]) ++ref_count[s];
    int correct = 0;
    for (int s : hyp_on[p]) {
      if (s >= 0 && ref_count[s] > 0) {
        --ref_count[s];
        ++correct;
      }
    }
    std::fill(ref_count.begin(), ref_count.end(), 0);
    components.total_s += duration * n_ref;
    components.correct_s += duration * correct;
    components.confusion_s += duration * (std::min(n_ref, n_hyp) - correct);
    components.missed_s += duration * std::max(0, n_ref - n_hyp);
    components.false_alarm_s += duration * std::max(0, n_hyp - n_ref);
  }
  return components;
}

absl::StatusOr<CorpusDer> ComputeCorpusDer(
    const std::vector<Segment>& reference,
    const std::vector<Segment>& hypothesis, const DerOptions& options,
    const std::map<std::string, std::vector<Interval>>* uem) {
  std::map<std::string, std::pair<std::vector<Segment>, std::vector<Segment>>>
      by_uri;
  for (const Segment& s : reference) by_uri[s.uri].first.push_back(s);
  for (const Segment& s : hypothesis) by_uri[s.uri].second.push_back(s);
  CorpusDer corpus;
  for (const auto& [uri, sides] : by_uri) {
    const std::vector<Interval>* file_uem = nullptr;
    if (uem != nullptr) {
      if (auto it = uem->find(uri); it != uem->end()) file_uem = &it->second;
    }
    absl::StatusOr<DerComponents> components =
        ComputeDer(sides.first, sides.second, options, file_uem);
    if (!components.ok()) {
      return absl::Status(
          components.status().code(),
          absl::StrCat("file '", uri, "': ", components.status().message()));
    }
    corpus.files.push_back({uri, *components});
    corpus.total += *components;
  }
  return corpus;
}

}  // namespace diarization::eval
