// Cost of resampling to 16 kHz as pyannote does (engine/audio/resampler.h):
// the recording and its crop edges, one thread, per input rate. Prints one
// JSON line per rate: audio seconds per CPU second (the resampler's RTFx on
// one core) and the edges' bytes per audio second.
//
//   bazel run -c opt //bench/audio:resample_bench -- --seconds=600
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/audio/resampler.h"
#include "engine/common/crop_edges.h"

ABSL_FLAG(int, seconds, 600, "Seconds of noise per rate");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int seconds = absl::GetFlag(FLAGS_seconds);
  for (const int rate : {8000, 22050, 44100, 48000}) {
    std::mt19937 rng(rate);
    std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(rate) * seconds);
    for (float& v : x) v = noise(rng);
    auto resampler = diarization::audio::Resampler::Create(rate);
    if (!resampler.ok()) return 1;
    std::vector<float> out;
    diarization::CropEdges edges;
    const auto start = std::chrono::steady_clock::now();
    // In 100 ms chunks, as a stream arrives.
    for (size_t at = 0; at < x.size(); at += rate / 10) {
      const size_t n = std::min<size_t>(rate / 10, x.size() - at);
      if (!(*resampler)
               ->Process(std::span<const float>(x).subspan(at, n), out, &edges)
               .ok()) {
        return 1;
      }
    }
    if (!(*resampler)->Flush(out, &edges).ok()) return 1;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf(
        "{\"rate_hz\": %d, \"audio_s\": %d, \"wall_s\": %.3f, "
        "\"rtfx_one_core\": %.0f, \"edge_bytes_per_s\": %.1f}\n",
        rate, seconds, elapsed, seconds / elapsed,
        static_cast<double>(edges.seconds.size() * sizeof(float)) / seconds);
  }
  return 0;
}
