#include "engine/pipeline/segments.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/pipeline/windows.h"

namespace diarization::pipeline {
namespace {

// pyannote.core string_generator: A..Z, AA, AB, ...
std::string TrackName(int k) {
  std::string name;
  int i = k;
  // Lengths grow 1, 2, ... letters; index within the length block.
  int len = 1;
  long block = 26;
  while (i >= block) {
    i -= block;
    ++len;
    block *= 26;
  }
  name.assign(len, 'A');
  for (int p = len - 1; p >= 0; --p) {
    name[p] = static_cast<char>('A' + i % 26);
    i /= 26;
  }
  return name;
}

}  // namespace

std::vector<Turn> Binarize(const DiscreteDiarization& discrete,
                           double min_duration_off) {
  constexpr double kOnset = 0.5, kOffset = 0.5;
  std::vector<Turn> turns;
  const int frames = discrete.num_frames, columns = discrete.num_speakers;
  if (frames == 0) return turns;
  // One pass over the frames with every column's state (the array is
  // frame-major; a pass per column would re-read it `columns` times).
  std::vector<std::vector<Turn>> per_column(columns);
  std::vector<double> start(columns, FrameMiddle(0));
  std::vector<char> active(columns);
  for (int k = 0; k < columns; ++k) active[k] = discrete.data[k] > kOnset;
  double t_s = FrameMiddle(0);
  for (int t = 1; t < frames; ++t) {
    t_s = FrameMiddle(t);
    const float* row = discrete.data.data() + static_cast<size_t>(t) * columns;
    for (int k = 0; k < columns; ++k) {
      const float y = row[k];
      if (active[k]) {
        if (y < kOffset) {
          per_column[k].push_back({start[k], t_s, k});
          start[k] = t_s;
          active[k] = false;
        }
      } else if (y > kOnset) {
        start[k] = t_s;
        active[k] = true;
      }
    }
  }
  for (int k = 0; k < columns; ++k) {
    std::vector<Turn>& column = per_column[k];
    if (active[k]) column.push_back({start[k], t_s, k});
    if (min_duration_off > 0.0 && !column.empty()) {
      // Timeline.support(collar): merge regions whose gap is < collar.
      std::vector<Turn> merged{column[0]};
      for (size_t i = 1; i < column.size(); ++i) {
        if (column[i].start_s - merged.back().end_s < min_duration_off) {
          merged.back().end_s = std::max(merged.back().end_s, column[i].end_s);
        } else {
          merged.push_back(column[i]);
        }
      }
      column = std::move(merged);
    }
    for (const Turn& turn : column) {
      if (turn.end_s - turn.start_s > 1e-6) turns.push_back(turn);
    }
  }
  return turns;
}

std::map<int, std::string> SpeakerLabels(const std::vector<Turn>& turns) {
  std::vector<int> present;
  for (const Turn& t : turns) present.push_back(t.column);
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  std::sort(present.begin(), present.end(),
            [](int a, int b) { return absl::StrCat(a) < absl::StrCat(b); });
  std::map<int, std::string> labels;
  for (size_t i = 0; i < present.size(); ++i) {
    labels[present[i]] = absl::StrFormat("SPEAKER_%02d", static_cast<int>(i));
  }
  return labels;
}

std::vector<Segment> ToSegments(const std::vector<Turn>& turns,
                                const std::map<int, std::string>& labels,
                                const std::string& uri) {
  std::vector<Turn> sorted = turns;
  std::stable_sort(
      sorted.begin(), sorted.end(), [](const Turn& a, const Turn& b) {
        return std::make_tuple(a.start_s, a.end_s, TrackName(a.column)) <
               std::make_tuple(b.start_s, b.end_s, TrackName(b.column));
      });
  std::vector<Segment> out;
  out.reserve(sorted.size());
  for (const Turn& t : sorted) {
    Segment s;
    s.start_s = t.start_s;
    s.end_s = t.end_s;
    auto it = labels.find(t.column);
    s.speaker = it != labels.end() ? it->second : absl::StrCat(t.column);
    s.uri = uri;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace diarization::pipeline
