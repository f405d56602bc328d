// Optional per-stage timing of the CPU networks: when the environment
// variable DIARIZATION_CPU_PROFILE is set, each Run prints its stages' wall
// times to stderr (for benchmarks and tuning; off by default, one getenv).
#ifndef DIARIZATION_ENGINE_MODELS_STAGE_TIMER_H_
#define DIARIZATION_ENGINE_MODELS_STAGE_TIMER_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace diarization::models {

class StageTimer {
 public:
  StageTimer(const char* network, int batch)
      : enabled_(std::getenv("DIARIZATION_CPU_PROFILE") != nullptr),
        network_(network),
        batch_(batch),
        last_(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    if (enabled_)
      std::fprintf(stderr, "%s (batch %d):%s\n", network_, batch_,
                   line_.c_str());
  }
  void Mark(const char* stage) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    char buf[96];
    std::snprintf(
        buf, sizeof(buf), " %s %.1f ms", stage,
        std::chrono::duration<double, std::milli>(now - last_).count());
    line_ += buf;
    last_ = now;
  }

 private:
  bool enabled_;
  const char* network_;
  int batch_;
  std::chrono::steady_clock::time_point last_;
  std::string line_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_STAGE_TIMER_H_
