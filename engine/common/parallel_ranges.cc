#include "engine/common/parallel_ranges.h"

#include <algorithm>
#include <thread>

namespace diarization {

void RunRanges(std::span<const int> bounds,
               const std::function<void(int, int)>& body) {
  if (bounds.size() < 2) return;
  const size_t ranges = bounds.size() - 1;
  std::vector<std::thread> workers;
  workers.reserve(ranges - 1);
  for (size_t t = 1; t < ranges; ++t) {
    workers.emplace_back(body, bounds[t], bounds[t + 1]);
  }
  body(bounds[0], bounds[1]);
  for (std::thread& w : workers) w.join();
}

void ForEvenRanges(int n, int threads, int min_per_range,
                   const std::function<void(int, int)>& body) {
  if (n <= 0) return;
  const int parts =
      std::clamp(std::min(threads, n / std::max(1, min_per_range)), 1, 64);
  std::vector<int> bounds(parts + 1);
  for (int t = 0; t <= parts; ++t) {
    bounds[t] = static_cast<int>(static_cast<long long>(n) * t / parts);
  }
  RunRanges(bounds, body);
}

void ForUpperTriangleRows(int n, int threads, int min_rows_per_range,
                          const std::function<void(int, int)>& body) {
  if (n <= 0) return;
  threads =
      std::clamp(std::min(threads, n / std::max(1, min_rows_per_range)), 1, 64);
  if (threads == 1) {
    body(0, n);
    return;
  }
  // Range t ends where the entries before it reach (t + 1) / threads of the
  // n(n−1)/2: rows [0, i) hold i·n − i(i+1)/2 entries.
  const double total = 0.5 * n * (n - 1.0);
  std::vector<int> bounds(threads + 1, n);
  bounds[0] = 0;
  int i = 0;
  for (int t = 1; t < threads; ++t) {
    const double want = total * t / threads;
    while (i < n && static_cast<double>(i) * n - 0.5 * i * (i + 1.0) < want) {
      ++i;
    }
    bounds[t] = i;
  }
  RunRanges(bounds, body);
}

}  // namespace diarization
