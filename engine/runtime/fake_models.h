// Test doubles for the two networks whose outputs are a known function of
// the input audio, so engine results can be checked by construction.
//
// Segmentation: frame f of a window reads one probe sample,
// x = window[f · kFakeProbeStride], and picks powerset class
// FakeClass(x) = min(6, floor(|x| · 7)); its log-probability is 0 and every
// other class gets a distinct negative value. Audio made of levels
// (class + 0.5) / 7 therefore "contains" chosen speakers.
// Embedding: FakeEmbedding() below, a mask-weighted mean of a per-frame
// feature of the probe samples (the bias 0.001·(d+1) for an empty mask,
// as the real model returns its bias).
//
// Both can be gated (block inside Run until opened), slowed down, made to
// fail, and record the sizes of the batches they saw.
#ifndef DIARIZATION_ENGINE_RUNTIME_FAKE_MODELS_H_
#define DIARIZATION_ENGINE_RUNTIME_FAKE_MODELS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/models/model_interfaces.h"

namespace diarization::runtime::testing {

inline constexpr int kFakeProbeStride = 271;  // 588 · 271 < 160000

int FakeClass(float x);
// Audio the fake segmentation reads as speaker turns: turns of 0.3-2 s, each
// of one powerset class drawn from `rng` (the one-speaker classes more
// often), every sample at that class's level (class + 0.5) / 7 with a
// jitter of +-0.06 and a random sign, so FakeClass gives the class back.
std::vector<float> FakeSpeakerAudio(int64_t num_samples, std::mt19937_64& rng);
// log_probs: 589 × 7 for one 160000-sample window.
void FakeLogProbs(const float* window, float* log_probs);
// embedding: 256 for one window and one 589-frame mask.
void FakeEmbedding(const float* window, const float* mask, float* embedding);

// Shared controls of a pair of fake models (one per device). Thread-safe.
class FakeControl {
 public:
  // While closed, Run blocks (after counting itself as entered). SetGate
  // sets both models' gates.
  void SetGate(bool open);
  void SetEmbeddingGate(bool open);
  // Blocks until `n` Run calls have entered (in total, both models).
  void WaitEntered(int n);
  // Same, giving up after `timeout`; returns whether `n` were reached.
  bool WaitEnteredFor(int n, absl::Duration timeout);
  void SetDelay(absl::Duration per_batch);
  // A cost per window on top of SetDelay's, for each model: a batch of n
  // windows sleeps delay + n × per_window (a device whose time grows with
  // the batch; bench/engine_scheduling simulates one).
  void SetPerWindowDelays(absl::Duration segmentation,
                          absl::Duration embedding);
  void SetFailure(absl::Status status);

  std::vector<int> segmentation_batches();
  // For each segmentation batch, the first sample of each of its windows
  // (lets a test spot a window by a marker value).
  std::vector<std::vector<float>> segmentation_first_samples();
  std::vector<int> embedding_batches();
  int windows_seen();
  // Every batch of both models in the order they entered, with the first
  // sample of each window (a window's marker value identifies its job).
  struct Batch {
    bool segmentation = true;
    std::vector<float> first_samples;
  };
  std::vector<Batch> batch_log();

  // Called by the fakes.
  absl::Status Enter(bool segmentation, int batch,
                     std::vector<float> first_samples = {});

 private:
  absl::Mutex mu_;
  bool seg_open_ ABSL_GUARDED_BY(mu_) = true;
  bool emb_open_ ABSL_GUARDED_BY(mu_) = true;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration seg_per_window_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration emb_per_window_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::vector<int> seg_batches_ ABSL_GUARDED_BY(mu_);
  std::vector<int> emb_batches_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<float>> seg_first_samples_ ABSL_GUARDED_BY(mu_);
  std::vector<Batch> log_ ABSL_GUARDED_BY(mu_);
};

class FakeSegmentationModel : public models::SegmentationModel {
 public:
  explicit FakeSegmentationModel(std::shared_ptr<FakeControl> control)
      : control_(std::move(control)) {}
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<float> log_probs) override;
  std::string precision() const override { return "fp32"; }

 private:
  std::shared_ptr<FakeControl> control_;
};

class FakeEmbeddingModel : public models::EmbeddingModel {
 public:
  explicit FakeEmbeddingModel(std::shared_ptr<FakeControl> control)
      : control_(std::move(control)) {}
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override;
  std::string precision() const override { return "fp32"; }

 private:
  std::shared_ptr<FakeControl> control_;
};

// A pipelined embedding model (EmbeddingModel::StartSpans) around another:
// StartSpans only copies the masks and keeps the spans; each batch runs at
// its FinishSpans, reading the spans' audio then, so a caller that changes
// a started batch's audio before finishing it gets wrong embeddings. Counts
// the most batches ever in flight at once.
class FakePipelinedEmbedding : public models::EmbeddingModel {
 public:
  explicit FakePipelinedEmbedding(std::unique_ptr<models::EmbeddingModel> inner)
      : inner_(std::move(inner)) {}
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override;
  absl::Status StartSpans(const models::WindowSpans& spans,
                          std::span<const float> masks, int masks_per_window,
                          std::span<float> embeddings) override;
  absl::Status FinishSpans() override;
  bool pipelined() const override { return true; }
  std::string precision() const override { return inner_->precision(); }
  int most_in_flight() const { return most_in_flight_.load(); }
  // Calls of StartSpans/FinishSpans from another thread than the first
  // call's (a model is called from one worker thread only, device.h).
  int calls_from_other_threads() const { return other_threads_.load(); }

 private:
  struct Started {
    models::WindowSpans spans;
    std::vector<float> masks;
    int masks_per_window = 0;
    std::span<float> embeddings;
  };
  std::unique_ptr<models::EmbeddingModel> inner_;
  std::deque<Started> started_;  // the caller's thread only
  std::atomic<int> most_in_flight_{0};
  void NoteThread();
  absl::Mutex thread_mu_;
  std::optional<std::thread::id> thread_ ABSL_GUARDED_BY(thread_mu_);
  std::atomic<int> other_threads_{0};
};

}  // namespace diarization::runtime::testing

#endif  // DIARIZATION_ENGINE_RUNTIME_FAKE_MODELS_H_
