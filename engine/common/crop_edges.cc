#include "engine/common/crop_edges.h"

#include <algorithm>

#include "engine/common/shapes.h"

namespace diarization {

void CropEdges::Append(const CropEdges& more) {
  if (more.margin != 0) margin = more.margin;
  seconds.insert(seconds.end(), more.seconds.begin(), more.seconds.end());
  past_end.insert(past_end.end(), more.past_end.begin(), more.past_end.end());
  finished = finished || more.finished;
}

bool ApplyCropEdges(const CropEdges& edges, int64_t recording_samples,
                    int64_t start_s, std::span<float> window) {
  if (edges.empty()) return true;
  const int64_t m = edges.margin;
  const int64_t first = start_s * kSampleRateHz;
  const int64_t size = static_cast<int64_t>(window.size());
  const int64_t end_s = start_s + size / kSampleRateHz;
  const int64_t known = edges.known_seconds();
  // Past the recording's end: the filter's tail (the window holds zeros).
  if (first + size > recording_samples) {
    if (!edges.finished) return false;
    const int64_t from = std::max(recording_samples, first);
    const int64_t to = std::min<int64_t>(
        first + size,
        recording_samples + static_cast<int64_t>(edges.past_end.size()));
    for (int64_t p = from; p < to; ++p) {
      window[p - first] = edges.past_end[p - recording_samples];
    }
  }
  // The crop's start and end; seconds past the known ones are silent once
  // the input has ended.
  for (const int64_t k : {start_s, end_s}) {
    if (k >= known && !edges.finished) return false;
  }
  if (start_s < known) {
    const float* head = edges.seconds.data() + start_s * 2 * m + m;
    std::copy(head, head + std::min(m, size), window.begin());
  }
  if (end_s < known) {
    const float* tail = edges.seconds.data() + end_s * 2 * m;
    const int64_t count = std::min(m, size);
    std::copy(tail + (m - count), tail + m, window.end() - count);
  }
  return true;
}

}  // namespace diarization
