#include "engine/pipeline/reconstruction.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/common/parallel_ranges.h"

namespace diarization::pipeline {

namespace {

// Frames per thread below which a split costs more than it saves (a frame
// is a few nanoseconds of work per window covering it).
constexpr int kMinFramesPerThread = 8192;

}  // namespace

Activations AggregateActivations(std::span<const float> segmentations,
                                 std::span<const int> hard,
                                 std::span<const uint8_t> count,
                                 const FrameGrid& grid, int threads) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  const int num_windows = static_cast<int>(grid.window_offset.size());
  int clusters = 0;  // K' = max(hard) + 1
  for (int h : hard) clusters = std::max(clusters, h + 1);
  int max_count = 0;
  for (uint8_t c : count) max_count = std::max<int>(max_count, c);
  const int columns = std::max(clusters, max_count);

  // activations: Σ over windows of max_{s: hard=k} seg (skip_average).
  std::vector<float> act(static_cast<size_t>(grid.num_frames) * columns, 0.0f);
  // Frames [begin, end): every window overlapping them, in ascending order,
  // adds its part (the one-thread loop clipped to the range).
  ForEvenRanges(grid.num_frames, threads, kMinFramesPerThread,
                [&](int begin, int end) {
                  for (int c = 0; c < num_windows; ++c) {
                    const int o = grid.window_offset[c];
                    const int f_begin = std::max(0, begin - o);
                    const int f_end = std::min(F, end - o);
                    if (f_begin >= f_end) continue;
                    const float* seg =
                        segmentations.data() + static_cast<size_t>(c) * F * S;
                    for (int k = 0; k < clusters; ++k) {
                      int members[S];
                      int m = 0;
                      for (int s = 0; s < S; ++s) {
                        if (hard[c * S + s] == k) members[m++] = s;
                      }
                      if (m == 0) continue;  // NaN column: contributes nothing
                      for (int f = f_begin; f < f_end; ++f) {
                        float v = seg[f * S + members[0]];
                        for (int i = 1; i < m; ++i)
                          v = std::max(v, seg[f * S + members[i]]);
                        if (std::isnan(v)) continue;
                        act[static_cast<size_t>(o + f) * columns + k] += v;
                      }
                    }
                  }
                });

  Activations out;
  out.num_frames = grid.num_frames;
  out.columns = columns;
  out.data = std::move(act);
  return out;
}

DiscreteDiarization TopSpeakers(const Activations& activations,
                                std::span<const uint8_t> count, int threads) {
  const int columns = activations.columns;
  const std::vector<float>& act = activations.data;
  DiscreteDiarization out;
  out.num_frames = activations.num_frames;
  out.num_speakers = columns;
  out.data.assign(act.size(), 0.0f);
  ForEvenRanges(
      activations.num_frames, threads, kMinFramesPerThread,
      [&](int begin, int end) {
        for (int t = begin; t < end; ++t) {
          const int want = t < static_cast<int>(count.size()) ? count[t] : 0;
          if (want == 0) continue;
          const float* a = act.data() + static_cast<size_t>(t) * columns;
          // The first `want` entries of a stable sort by decreasing activation
          // (pyannote's argsort(-act); equal activations keep the lower column
          // first): repeatedly take the largest unpicked column, lowest index
          // on ties.
          float* row = out.data.data() + static_cast<size_t>(t) * columns;
          for (int i = 0; i < want && i < columns; ++i) {
            int best = -1;
            for (int k = 0; k < columns; ++k) {
              if (row[k] != 0.0f) continue;  // already picked
              if (best < 0 || a[k] > a[best]) best = k;
            }
            row[best] = 1.0f;
          }
        }
      });
  return out;
}

DiscreteDiarization Reconstruct(std::span<const float> segmentations,
                                std::span<const int> hard,
                                std::span<const uint8_t> count,
                                const FrameGrid& grid) {
  return TopSpeakers(AggregateActivations(segmentations, hard, count, grid),
                     count);
}

}  // namespace diarization::pipeline
