// Optional per-stage timing of the CPU networks: when the environment
// variable DIARIZATION_CPU_PROFILE is set, each Run prints its stages' wall
// and process CPU times (ms, "wall/cpu") to stderr, for benchmarks and
// tuning on a shared machine. Off by default (one getenv per Run).
#ifndef DIARIZATION_ENGINE_MODELS_CPU_STAGE_TIMER_H_
#define DIARIZATION_ENGINE_MODELS_CPU_STAGE_TIMER_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace diarization::models {

class StageTimer {
 public:
  StageTimer(const char* network, int batch)
      : enabled_(std::getenv("DIARIZATION_CPU_PROFILE") != nullptr),
        network_(network),
        batch_(batch),
        last_(std::chrono::steady_clock::now()),
        last_cpu_(CpuSeconds()) {}
  ~StageTimer() {
    if (enabled_)
      std::fprintf(stderr, "%s (batch %d):%s\n", network_, batch_,
                   line_.c_str());
  }
  void Mark(const char* stage) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double cpu = CpuSeconds();
    char buf[96];
    std::snprintf(
        buf, sizeof(buf), " %s %.1f/%.1f", stage,
        std::chrono::duration<double, std::milli>(now - last_).count(),
        1e3 * (cpu - last_cpu_));
    line_ += buf;
    last_ = now;
    last_cpu_ = cpu;
  }

 private:
  static double CpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  }
  bool enabled_;
  const char* network_;
  int batch_;
  std::chrono::steady_clock::time_point last_;
  double last_cpu_;
  std::string line_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_STAGE_TIMER_H_
