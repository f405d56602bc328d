#include "engine/runtime/fake_models.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace diarization::runtime::testing {

using models::kEmbeddingDim;
using models::kFramesPerWindow;
using models::kPowersetClasses;
using models::kWindowSamples;

int FakeClass(float x) {
  return std::min(6, static_cast<int>(std::floor(std::fabs(x) * 7.0f)));
}

std::vector<float> FakeSpeakerAudio(int64_t num_samples, std::mt19937_64& rng) {
  std::vector<float> audio(num_samples);
  std::uniform_int_distribution<int> len(4800, 32000);
  std::discrete_distribution<int> cls({20, 20, 20, 20, 7, 7, 6});
  std::uniform_real_distribution<float> jitter(-0.06f, 0.06f);
  std::bernoulli_distribution sign(0.5);
  int64_t i = 0;
  while (i < num_samples) {
    const int c = cls(rng);
    const int64_t end = std::min<int64_t>(num_samples, i + len(rng));
    for (; i < end; ++i) {
      const float level = (c + 0.5f) / 7.0f + jitter(rng);
      audio[i] = sign(rng) ? level : -level;
    }
  }
  return audio;
}

void FakeLogProbs(const float* window, float* log_probs) {
  for (int f = 0; f < kFramesPerWindow; ++f) {
    const int cls = FakeClass(window[f * kFakeProbeStride]);
    for (int k = 0; k < kPowersetClasses; ++k) {
      log_probs[f * kPowersetClasses + k] =
          k == cls ? 0.0f : -5.0f - 0.5f * static_cast<float>(k);
    }
  }
}

void FakeEmbedding(const float* window, const float* mask, float* embedding) {
  double weight = 0.0;
  for (int f = 0; f < kFramesPerWindow; ++f) weight += mask[f];
  for (int d = 0; d < kEmbeddingDim; ++d) {
    if (weight == 0.0) {
      embedding[d] = 0.001f * static_cast<float>(d + 1);
      continue;
    }
    double acc = 0.0;
    for (int f = 0; f < kFramesPerWindow; ++f) {
      if (mask[f] == 0.0f) continue;
      const double x = window[f * kFakeProbeStride];
      acc += mask[f] * (x * ((d % 7) + 1) + (d % 5) * x * x + 0.01 * (d % 3));
    }
    embedding[d] = static_cast<float>(acc / weight);
  }
}

void FakeControl::SetGate(bool open) {
  absl::MutexLock lock(&mu_);
  seg_open_ = open;
  emb_open_ = open;
}

void FakeControl::SetEmbeddingGate(bool open) {
  absl::MutexLock lock(&mu_);
  emb_open_ = open;
}

bool FakeControl::WaitEnteredFor(int n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entered_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

void FakeControl::WaitEntered(int n) {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entered_ >= n; };
  mu_.Await(absl::Condition(&cond));
}

void FakeControl::SetDelay(absl::Duration per_batch) {
  absl::MutexLock lock(&mu_);
  delay_ = per_batch;
}

void FakeControl::SetPerWindowDelays(absl::Duration segmentation,
                                     absl::Duration embedding) {
  absl::MutexLock lock(&mu_);
  seg_per_window_ = segmentation;
  emb_per_window_ = embedding;
}

void FakeControl::SetFailure(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
}

std::vector<int> FakeControl::segmentation_batches() {
  absl::MutexLock lock(&mu_);
  return seg_batches_;
}

std::vector<int> FakeControl::embedding_batches() {
  absl::MutexLock lock(&mu_);
  return emb_batches_;
}

int FakeControl::windows_seen() {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (int b : seg_batches_) n += b;
  return n;
}

std::vector<std::vector<float>> FakeControl::segmentation_first_samples() {
  absl::MutexLock lock(&mu_);
  return seg_first_samples_;
}

std::vector<FakeControl::Batch> FakeControl::batch_log() {
  absl::MutexLock lock(&mu_);
  return log_;
}

absl::Status FakeControl::Enter(bool segmentation, int batch,
                                std::vector<float> first_samples) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    ++entered_;
    (segmentation ? seg_batches_ : emb_batches_).push_back(batch);
    log_.push_back(Batch{segmentation, first_samples});
    if (segmentation) seg_first_samples_.push_back(std::move(first_samples));
    mu_.Await(absl::Condition(segmentation ? &seg_open_ : &emb_open_));
    delay = delay_ + batch * (segmentation ? seg_per_window_ : emb_per_window_);
    if (!failure_.ok()) return failure_;
  }
  if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
  return absl::OkStatus();
}

absl::Status FakeSegmentationModel::Run(std::span<const float> windows,
                                        int batch, std::span<float> log_probs) {
  const size_t out = size_t{kFramesPerWindow} * kPowersetClasses;
  if (batch < 1 || windows.size() != size_t{kWindowSamples} * batch ||
      log_probs.size() != out * batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fake segmentation: bad shapes for batch ", batch, ": windows ",
        windows.size(), ", log_probs ", log_probs.size()));
  }
  std::vector<float> first(batch);
  for (int b = 0; b < batch; ++b)
    first[b] = windows[size_t{kWindowSamples} * b];
  if (absl::Status s = control_->Enter(true, batch, std::move(first));
      !s.ok()) {
    return s;
  }
  for (int b = 0; b < batch; ++b) {
    FakeLogProbs(windows.data() + size_t{kWindowSamples} * b,
                 log_probs.data() + out * b);
  }
  return absl::OkStatus();
}

absl::Status FakeEmbeddingModel::Run(std::span<const float> windows, int batch,
                                     std::span<const float> masks,
                                     int masks_per_window,
                                     std::span<float> embeddings) {
  const size_t m = size_t(masks_per_window);
  if (batch < 1 || windows.size() != size_t{kWindowSamples} * batch ||
      masks.size() != m * kFramesPerWindow * batch ||
      embeddings.size() != m * kEmbeddingDim * batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake embedding: bad shapes for batch ", batch,
                     ": windows ", windows.size(), ", masks ", masks.size(),
                     ", embeddings ", embeddings.size()));
  }
  std::vector<float> first(batch);
  for (int b = 0; b < batch; ++b)
    first[b] = windows[size_t{kWindowSamples} * b];
  if (absl::Status s = control_->Enter(false, batch, std::move(first));
      !s.ok()) {
    return s;
  }
  for (int b = 0; b < batch; ++b) {
    for (size_t s = 0; s < m; ++s) {
      FakeEmbedding(windows.data() + size_t{kWindowSamples} * b,
                    masks.data() + (b * m + s) * kFramesPerWindow,
                    embeddings.data() + (b * m + s) * kEmbeddingDim);
    }
  }
  return absl::OkStatus();
}

absl::Status FakePipelinedEmbedding::Run(std::span<const float> windows,
                                         int batch,
                                         std::span<const float> masks,
                                         int masks_per_window,
                                         std::span<float> embeddings) {
  if (!started_.empty()) {
    return absl::FailedPreconditionError(
        "FakePipelinedEmbedding::Run while a batch is started");
  }
  return inner_->Run(windows, batch, masks, masks_per_window, embeddings);
}

void FakePipelinedEmbedding::NoteThread() {
  absl::MutexLock lock(&thread_mu_);
  if (!thread_.has_value()) thread_ = std::this_thread::get_id();
  if (*thread_ != std::this_thread::get_id()) ++other_threads_;
}

absl::Status FakePipelinedEmbedding::StartSpans(
    const models::WindowSpans& spans, std::span<const float> masks,
    int masks_per_window, std::span<float> embeddings) {
  NoteThread();
  if (started_.size() >= 2) {
    return absl::FailedPreconditionError(
        "FakePipelinedEmbedding::StartSpans: two batches are started");
  }
  started_.push_back(Started{.spans = spans,
                             .masks = {masks.begin(), masks.end()},
                             .masks_per_window = masks_per_window,
                             .embeddings = embeddings});
  const int now = static_cast<int>(started_.size());
  if (now > most_in_flight_.load()) most_in_flight_.store(now);
  return absl::OkStatus();
}

absl::Status FakePipelinedEmbedding::FinishSpans() {
  NoteThread();
  if (started_.empty()) {
    return absl::FailedPreconditionError(
        "FakePipelinedEmbedding::FinishSpans: no batch is started");
  }
  Started b = std::move(started_.front());
  started_.pop_front();
  return inner_->RunSpans(b.spans, b.masks, b.masks_per_window, b.embeddings);
}

}  // namespace diarization::runtime::testing
