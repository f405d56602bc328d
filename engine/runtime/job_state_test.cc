// JobState's audio: a stream's large buffers are kept as they are (no
// copy), small appends share a piece, and the samples come back in order
// across pieces, also after the prefix is dropped; checked against the
// plain concatenation of what was appended, on fresh random sizes.
#include "engine/runtime/job_state.h"

#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::runtime::internal {
namespace {

std::unique_ptr<JobState> MakeJob() {
  return std::make_unique<JobState>(1, JobOptions{}, JobCallbacks{},
                                    /*streaming=*/true, 0, 0, nullptr);
}

// The held samples [from, to) as the pieces give them, and how many pieces.
std::vector<float> Read(const JobState& job, int64_t from, int64_t to,
                        int* pieces = nullptr) {
  std::vector<float> out;
  int n = 0;
  job.ForEachAudioPieceLocked(from, to, [&](std::span<const float> p) {
    out.insert(out.end(), p.begin(), p.end());
    ++n;
  });
  if (pieces != nullptr) *pieces = n;
  return out;
}

std::vector<float> Iota(int64_t n, float first) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
  return v;
}

TEST(JobStateTest, ABufferOfASecondOrMoreIsKeptWithoutACopy) {
  auto job = MakeJob();
  absl::MutexLock lock(&job->mu());
  std::vector<int> windows;
  std::vector<float> buffer = Iota(3 * kSampleRateHz, 0.0f);
  const std::vector<float> expected = buffer;
  const float* data = buffer.data();
  ASSERT_TRUE(job->AppendLocked(std::move(buffer), &windows).ok());
  int pieces = 0;
  const float* first = nullptr;
  job->ForEachAudioPieceLocked(0, 3 * kSampleRateHz,
                               [&](std::span<const float> p) {
                                 if (pieces++ == 0) first = p.data();
                               });
  EXPECT_EQ(pieces, 1);
  EXPECT_EQ(first, data) << "the buffer was copied";
  EXPECT_EQ(Read(*job, 0, 3 * kSampleRateHz), expected);
  // A short buffer is copied (into the last piece's room or a new piece).
  std::vector<float> small = Iota(100, -1.0f);
  ASSERT_TRUE(job->AppendLocked(std::move(small), &windows).ok());
  EXPECT_EQ(job->num_samples_locked(), 3 * kSampleRateHz + 100);
}

TEST(JobStateTest, SmallAppendsShareAPiece) {
  auto job = MakeJob();
  absl::MutexLock lock(&job->mu());
  std::vector<int> windows;
  std::vector<float> all;
  for (int i = 0; i < 100; ++i) {
    const std::vector<float> chunk = Iota(160, 160.0f * i);
    ASSERT_TRUE(
        job->AppendLocked(std::span<const float>(chunk), &windows).ok());
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  int pieces = 0;
  EXPECT_EQ(Read(*job, 0, 16000, &pieces), all);
  EXPECT_EQ(pieces, 1);
}

TEST(JobStateTest, PiecesGiveTheSamplesInOrderAlsoAfterTheyAreDropped) {
  const uint64_t seed = std::random_device{}();
  std::printf("job_state_test seed: %llu\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    auto job = MakeJob();
    absl::MutexLock lock(&job->mu());
    std::vector<int> windows;
    std::vector<float> all;
    const float* kept = nullptr;  // a large buffer's data, if one was taken
    int64_t kept_at = -1;
    for (int i = 0; i < 12; ++i) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % (3 * kSampleRateHz));
      std::vector<float> chunk = Iota(n, static_cast<float>(all.size()));
      all.insert(all.end(), chunk.begin(), chunk.end());
      if (rng() % 2 == 0) {
        ASSERT_TRUE(
            job->AppendLocked(std::span<const float>(chunk), &windows).ok());
      } else {
        if (n >= JobState::kOwnedChunkSamples && kept == nullptr) {
          kept = chunk.data();
          kept_at = static_cast<int64_t>(all.size()) - n;
        }
        ASSERT_TRUE(job->AppendLocked(std::move(chunk), &windows).ok());
      }
    }
    const int64_t total = static_cast<int64_t>(all.size());
    ASSERT_EQ(job->num_samples_locked(), total);
    for (int k = 0; k < 20; ++k) {
      const int64_t a = static_cast<int64_t>(rng() % (total + 1));
      const int64_t b = static_cast<int64_t>(rng() % (total + 1));
      const int64_t from = std::min(a, b), to = std::max(a, b);
      EXPECT_EQ(Read(*job, from, to),
                std::vector<float>(all.begin() + from, all.begin() + to))
          << "[" << from << ", " << to << ")";
    }
    // (MemoryBytes takes the job's mutex itself.)
    job->mu().Unlock();
    const int64_t bytes = job->MemoryBytes();
    job->mu().Lock();
    const int64_t drop = static_cast<int64_t>(rng() % (total + 1));
    job->DropAudioBeforeLocked(drop);
    EXPECT_EQ(job->audio_offset_locked(), drop);
    job->mu().Unlock();
    EXPECT_LE(job->MemoryBytes(), bytes);
    job->mu().Lock();
    EXPECT_EQ(Read(*job, drop, total),
              std::vector<float>(all.begin() + drop, all.end()));
    if (kept != nullptr && kept_at >= drop) {
      // A whole piece after the cut stays where it was.
      const float* at = nullptr;
      job->ForEachAudioPieceLocked(
          kept_at, kept_at + 1,
          [&](std::span<const float> p) { at = p.data(); });
      EXPECT_EQ(at, kept) << "a piece after the cut was copied";
    }
  }
}

}  // namespace
}  // namespace diarization::runtime::internal
