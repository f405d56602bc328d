// Times identification and stable labelling (SpeakerLabeler::Apply) for a
// result of S speakers against K known speakers, 256-d, on one thread: the
// figures of docs/benchmarks.md, "Identification's cost".
// Usage: identify_bench [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/pipeline/speaker_labeler.h"

int main(int argc, char** argv) {
  using diarization::Segment;
  using namespace diarization::pipeline;
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0, 1);
  auto vec = [&] {
    std::vector<float> v(256);
    for (float& x : v) x = n(rng);
    return v;
  };
  for (const int speakers : {2, 8, 32}) {
    for (const int known_count : {1, 16, 64}) {
      std::vector<KnownSpeaker> known;
      for (int k = 0; k < known_count; ++k) {
        known.push_back({"k" + std::to_string(k), vec()});
      }
      std::vector<std::string> labels;
      std::vector<std::vector<float>> centroids;
      std::vector<Segment> segments;
      for (int s = 0; s < speakers; ++s) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "SPEAKER_%02d", s);
        labels.push_back(buf);
        centroids.push_back(vec());
        for (int t = 0; t < 50; ++t)
          segments.push_back({t * 1.0, t + 0.5, buf, "u"});
      }
      SpeakerLabeler labeler(known, 0.5, /*stable_labels=*/true);
      // The best of 5 batches: the machine may be shared.
      double us = 1e300;
      for (int batch = 0; batch < 5; ++batch) {
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < repeats; ++r) {
          std::vector<Segment> copy = segments;
          labeler.Apply(labels, centroids, {&copy});
        }
        us = std::min(us, std::chrono::duration<double, std::micro>(
                              std::chrono::steady_clock::now() - start)
                                  .count() /
                              repeats);
      }
      std::printf("speakers %2d known %2d: %8.1f us per result\n", speakers,
                  known_count, us);
    }
  }
  return 0;
}
