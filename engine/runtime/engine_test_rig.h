// The shared rig of the engine tests (engine_*_test.cc): fake networks
// whose outputs are a known function of the audio (fake_models.h), an
// independent computation of every window's segmentation, masks and
// embeddings, an engine built on them, and a recorder of a job's callbacks.
// Audio is fresh random per run (the seed is printed). Each test file is
// built twice: with one worker thread per device and with one per stage
// (Device::concurrent_stages; kConcurrentStages tells which).
#ifndef DIARIZATION_ENGINE_RUNTIME_ENGINE_TEST_RIG_H_
#define DIARIZATION_ENGINE_RUNTIME_ENGINE_TEST_RIG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/fake_models.h"
#include "prometheus/registry.h"

namespace diarization::runtime::testing {

inline constexpr int kWin = 160000;
inline constexpr int kF = 589;
inline constexpr int kS = 3;
inline constexpr int kD = 256;
// ---------------------------------------------------------------- audio --

// Guards Rng().
extern absl::Mutex rng_mu;
// The run's random source, seeded from std::random_device (printed).
std::mt19937_64& Rng();

// Speaker turns the fake segmentation reads back (fake_models.h).
std::vector<float> RandomAudio(int64_t num_samples);

// ---------------------------------------- expected outputs, independently --

int NumWindows(int64_t n, int64_t step);

struct Expected {
  int num_windows = 0;
  std::vector<float> segmentations;  // (C, 589, 3)
  std::vector<float> embeddings;     // (C, 3, 256)
};
// The segmentations and embeddings the fakes give `audio` (step `step`),
// computed here window by window.
Expected Compute(const std::vector<float>& audio, int64_t step);

// ------------------------------------------------------------------ rig --

// Hands the cluster stage's inputs back in the output, so tests see exactly
// what the engine fed it.
absl::StatusOr<pipeline::DiarizationOutput> EchoCluster(
    std::span<const float> seg, std::span<const float> emb, int num_windows,
    const pipeline::PipelineConfig&, const pipeline::SpeakerHints&);

struct Rig {
  std::vector<std::shared_ptr<FakeControl>> controls;
  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<Metrics> metrics;
  std::unique_ptr<Engine> engine;
};
// True in the binaries built with two worker threads per device
// (Device::concurrent_stages), false in those with one.
extern const bool kConcurrentStages;

// An engine on `num_devices` fake devices ("fake:0", ...); EchoCluster as
// the cluster stage unless `plda` or options.cluster_function is given.
Rig MakeRig(EngineOptions options, int num_devices = 1,
            std::shared_ptr<const pipeline::PldaModel> plda = nullptr,
            std::function<DeviceMemoryStats()> memory = nullptr,
            std::function<void(Device&, std::shared_ptr<FakeControl>)>
                customize = nullptr);

// Records callbacks; fails the test on a second completion.
class Outcome {
 public:
  JobCallbacks Callbacks() {
    JobCallbacks cb;
    cb.on_complete = [this](absl::StatusOr<JobResult> r) {
      absl::MutexLock lock(&mu_);
      ++completions_;
      result_ = std::move(r);
    };
    cb.on_partial = [this](PartialResult p) {
      absl::MutexLock lock(&mu_);
      if (completions_ > 0) partial_after_completion_ = true;
      partials_.push_back(std::move(p));
    };
    return cb;
  }
  // Waits for the completion (up to `timeout`).
  bool Wait(absl::Duration timeout = absl::Seconds(60)) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return completions_ > 0;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  }
  absl::StatusOr<JobResult> result() {
    absl::MutexLock lock(&mu_);
    return result_.value_or(absl::UnknownError("no completion yet"));
  }
  int completions() {
    absl::MutexLock lock(&mu_);
    return completions_;
  }
  std::vector<PartialResult> partials() {
    absl::MutexLock lock(&mu_);
    return partials_;
  }
  bool partial_after_completion() {
    absl::MutexLock lock(&mu_);
    return partial_after_completion_;
  }

 private:
  absl::Mutex mu_;
  int completions_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::StatusOr<JobResult>> result_ ABSL_GUARDED_BY(mu_);
  std::vector<PartialResult> partials_ ABSL_GUARDED_BY(mu_);
  bool partial_after_completion_ ABSL_GUARDED_BY(mu_) = false;
};
// Checks an EchoCluster result against the independent computation.
void ExpectMatches(const JobResult& r, const Expected& e,
                   const std::string& what);

// Streams `audio` in random chunk sizes in [1, max_chunk].
absl::Status StreamAll(Job& job, const std::vector<float>& audio,
                       int max_chunk);

// ------------------------------------------------------- metric reading --

// Polls `done` until it holds or 10 s pass (bookkeeping such as
// active_jobs and the gauges is updated just after a job's callback, so a
// fixed sleep would be flaky on a loaded machine).
bool Eventually(const std::function<bool()>& done);

}  // namespace diarization::runtime::testing

#endif  // DIARIZATION_ENGINE_RUNTIME_ENGINE_TEST_RIG_H_
