// BatchWindows against windows cut directly from the jobs' audio (the
// materialised windows must equal pyannote's zero-padded 10 s windows), on
// fresh random audio, step and window choices; and the copy it saves.
#include "engine/runtime/batch_windows.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::runtime::internal {
namespace {

std::unique_ptr<JobState> MakeJob(uint64_t id, int64_t step,
                                  std::vector<float> audio,
                                  int64_t audio_offset) {
  JobOptions options;
  options.config.step_samples = step;
  auto job = std::make_unique<JobState>(id, options, JobCallbacks{},
                                        /*streaming_in=*/true, 0, 0, nullptr);
  // Samples [audio_offset, audio_offset + audio.size()) held: the prefix
  // arrives and is dropped, as a stream's audio is trimmed.
  absl::MutexLock lock(&job->mu());
  std::vector<int> windows;
  EXPECT_TRUE(
      job->AppendLocked(std::vector<float>(audio_offset, 0.0f), &windows).ok());
  EXPECT_TRUE(job->AppendLocked(audio, &windows).ok());
  job->DropAudioBeforeLocked(audio_offset);
  return job;
}

// Window `index` of a recording whose samples [offset, offset + size) are
// `audio`: zero past the end, as pyannote pads the last window.
std::vector<float> Expected(const std::vector<float>& audio, int64_t offset,
                            int64_t step, int index) {
  std::vector<float> w(kWindowSamples, 0.0f);
  const int64_t start = step * index;
  for (int64_t j = 0; j < kWindowSamples; ++j) {
    const int64_t src = start + j - offset;
    if (src >= 0 && src < static_cast<int64_t>(audio.size())) w[j] = audio[src];
  }
  return w;
}

// Rounds cycle through the three places a batch's audio can live: memory
// of its own, a buffer large enough for any batch (as the worker gives it,
// Device::pinned_host_floats), and a buffer too small for some batches (which
// then move to memory of their own). One BatchWindows serves every round of
// a place, so a batch after one that outgrew the buffer is in the buffer
// again.
TEST(BatchWindowsTest, MaterialisedWindowsEqualTheJobsWindows) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  constexpr int kMaxBatch = 40;
  BatchWindows places[3];
  const size_t big = size_t{kMaxBatch} * kWindowSamples;
  const size_t small = 3 * kWindowSamples + rng() % kWindowSamples;
  std::shared_ptr<float[]> big_buffer(new float[big]);
  std::shared_ptr<float[]> small_buffer(new float[small]);
  places[1].UseBuffer(big_buffer, big);
  places[2].UseBuffer(small_buffer, small);
  int in_small = 0, outgrew_small = 0;
  for (int round = 0; round < 60; ++round) {
    // Two jobs with different steps; the second has trimmed its head.
    const int64_t steps[2] = {16000, int64_t{8000} + rng() % 40000};
    const int64_t offsets[2] = {0, steps[1] * int64_t(rng() % 3)};
    std::vector<float> audio[2];
    std::vector<std::unique_ptr<JobState>> jobs;
    for (int j = 0; j < 2; ++j) {
      audio[j].resize(kWindowSamples + rng() % (40 * 16000));
      for (float& x : audio[j]) x = u(rng);
      jobs.push_back(MakeJob(j + 1, steps[j], audio[j], offsets[j]));
    }
    // A batch: runs of consecutive windows of each job, interleaved, some
    // windows repeated or skipped, the last (padded) window sometimes in.
    const int place = round % 3;
    BatchWindows& bw = places[place];
    bw.Clear();
    std::vector<std::pair<int, int>> picked;  // (job, window)
    const int n = 1 + rng() % kMaxBatch;
    int next[2] = {static_cast<int>(offsets[0] / steps[0]),
                   static_cast<int>(offsets[1] / steps[1])};
    for (int i = 0; i < n; ++i) {
      const int j = (rng() % 3 == 0) ? 1 : 0;
      const int64_t total = offsets[j] + int64_t(audio[j].size());
      const int last = static_cast<int>((total - 1) / steps[j]);
      if (next[j] > last) next[j] = static_cast<int>(offsets[j] / steps[j]);
      const int w = next[j];
      next[j] += (rng() % 5 == 0) ? 2 + rng() % 10 : 1;
      absl::MutexLock lock(&jobs[j]->mu());
      bw.Add(*jobs[j], w);
      picked.emplace_back(j, w);
    }
    const models::WindowSpans spans = bw.spans();
    ASSERT_TRUE(models::ValidateWindowSpans(spans).ok());
    ASSERT_EQ(spans.batch(), n);
    ASSERT_EQ(spans.audio.size(), size_t(bw.audio_samples()));
    if (place == 1) {
      EXPECT_EQ(spans.audio.data(), big_buffer.get()) << "round " << round;
    } else if (place == 2) {
      const bool fits = spans.audio.size() <= small;
      EXPECT_EQ(spans.audio.data() == small_buffer.get(), fits)
          << "round " << round << ": " << spans.audio.size() << " samples";
      (fits ? in_small : outgrew_small)++;
    }
    const std::vector<float> got = models::MaterializeWindows(spans);
    for (int i = 0; i < n; ++i) {
      const auto [j, w] = picked[i];
      const std::vector<float> want =
          Expected(audio[j], offsets[j], steps[j], w);
      ASSERT_TRUE(std::equal(want.begin(), want.end(),
                             got.begin() + size_t(i) * kWindowSamples))
          << "round " << round << " window " << i << " (job " << j
          << ", its window " << w << ")";
    }
  }
  std::printf("small buffer: %d batches in it, %d outgrew it\n", in_small,
              outgrew_small);
}

TEST(BatchWindowsTest, ConsecutiveWindowsShareTheirAudio) {
  std::vector<float> audio(100 * 16000, 0.5f);
  auto job = MakeJob(1, 16000, audio, 0);
  BatchWindows bw;
  absl::MutexLock lock(&job->mu());
  for (int c = 0; c < 32; ++c) bw.Add(*job, c);
  EXPECT_EQ(bw.audio_samples(), int64_t{31} * 16000 + kWindowSamples);
}

TEST(BatchWindowsTest, EndedJobGivesSilence) {
  std::vector<float> audio(20 * 16000, 0.25f);
  auto job = MakeJob(1, 16000, audio, 0);
  BatchWindows bw;
  absl::MutexLock lock(&job->mu());
  job->EndLocked(absl::CancelledError("ended"));
  bw.Add(*job, 0);
  const std::vector<float> w = models::MaterializeWindows(bw.spans());
  EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](float x) { return x == 0; }));
}

}  // namespace
}  // namespace diarization::runtime::internal
