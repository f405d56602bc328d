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

}  // namespace diarization
