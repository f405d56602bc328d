#include "engine/runtime/batch_queue.h"

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "absl/time/clock.h"
#include "engine/runtime/batch_windows.h"
#include "gtest/gtest.h"

namespace diarization::runtime::internal {
namespace {

std::shared_ptr<JobState> MakeJob(uint64_t id, bool streaming = false) {
  return std::make_shared<JobState>(id, JobOptions{}, JobCallbacks{}, streaming,
                                    /*device=*/0,
                                    /*ticket=*/0, /*callback_pool=*/nullptr);
}

// EngineOptions::live_windows_first (issue 39): streaming windows only, in
// turn across the streams, the bulk job's left in place.
TEST(BatchQueueTest, StreamingBatchTakesOnlyStreamingWindows) {
  BatchQueue q;
  auto bulk = MakeJob(1), s1 = MakeJob(2, true), s2 = MakeJob(3, true);
  const absl::Time t0 = absl::Now();
  for (int c = 0; c < 50; ++c) q.Push({bulk, c, t0});
  EXPECT_FALSE(q.HasStreaming());
  q.Push({s1, 0, t0});
  q.Push({s1, 1, t0});
  q.Push({s2, 0, t0});
  EXPECT_TRUE(q.HasStreaming());
  const std::vector<WindowTask> live = q.PopStreamingBatch(2);
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].job->id(), 2u);
  EXPECT_EQ(live[0].window, 0);
  EXPECT_EQ(live[1].job->id(), 3u);
  const std::vector<WindowTask> rest = q.PopStreamingBatch(4);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].window, 1);
  EXPECT_FALSE(q.HasStreaming());
  EXPECT_EQ(q.size(), 50u);
  EXPECT_TRUE(q.PopStreamingBatch(4).empty());
}

TEST(BatchQueueTest, BatchesTakeJobsInTurnAndKeepEachJobsOrder) {
  BatchQueue q;
  auto big = MakeJob(1), a = MakeJob(2), b = MakeJob(3);
  const absl::Time t0 = absl::Now();
  for (int c = 0; c < 100; ++c) q.Push({big, c, t0 + absl::Milliseconds(c)});
  for (int c = 0; c < 2; ++c) q.Push({a, c, t0 + absl::Seconds(1)});
  for (int c = 0; c < 2; ++c) q.Push({b, c, t0 + absl::Seconds(2)});
  EXPECT_EQ(q.size(), 104u);
  EXPECT_EQ(q.jobs(), 3u);
  EXPECT_EQ(q.oldest(), t0);

  const std::vector<WindowTask> batch = q.PopBatch(8);
  ASSERT_EQ(batch.size(), 8u);
  std::map<uint64_t, std::vector<int>> got;
  for (const WindowTask& t : batch) got[t.job->id()].push_back(t.window);
  // Round-robin 1,2,3,1,2,3,1,1: the small jobs are not held back.
  EXPECT_EQ(got[1], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(got[2], (std::vector<int>{0, 1}));
  EXPECT_EQ(got[3], (std::vector<int>{0, 1}));
  EXPECT_EQ(q.size(), 96u);
  EXPECT_EQ(q.jobs(), 1u);
  EXPECT_EQ(q.oldest(), t0 + absl::Milliseconds(4));

  // A job arriving now shares the next batch with the big one.
  auto late = MakeJob(4);
  q.Push({late, 0, t0 + absl::Seconds(3)});
  const std::vector<WindowTask> next = q.PopBatch(4);
  ASSERT_EQ(next.size(), 4u);
  int from_late = 0;
  for (const WindowTask& t : next) from_late += t.job->id() == 4;
  EXPECT_EQ(from_late, 1);
}

TEST(BatchQueueTest, DropAndTerminalJobsLeaveNothingBehind) {
  BatchQueue q;
  auto keep = MakeJob(1), drop = MakeJob(2), done = MakeJob(3);
  for (int c = 0; c < 5; ++c) {
    q.Push({keep, c, absl::Now()});
    q.Push({drop, c, absl::Now()});
    q.Push({done, c, absl::Now()});
  }
  q.DropJob(2);
  EXPECT_EQ(q.size(), 10u);
  {
    absl::MutexLock lock(&done->mu());
    done->EndLocked(absl::CancelledError("ended"));
  }
  const std::vector<WindowTask> batch = q.PopBatch(32);
  ASSERT_EQ(batch.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(batch[i].job->id(), 1u);
    EXPECT_EQ(batch[i].window, i);
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.oldest(), absl::InfiniteFuture());
  q.DropJob(99);  // unknown: no-op
  EXPECT_TRUE(q.PopBatch(4).empty());
}

// Many jobs with a few consecutive windows each (streams under load): the
// batch holds the round-robin's choice of windows, lists each job's windows
// together in window order, and so BatchWindows copies each job's run of
// windows as one span: (k − 1) steps + one window per job, not k windows.
// Fresh random job counts, queue lengths and batch sizes on every run.
TEST(BatchQueueTest, AJobsWindowsAreNeighboursAndShareTheirAudio) {
  const uint64_t seed = std::random_device{}();
  std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr int64_t kStep = 16000, kWin = 160000;
  for (int trial = 0; trial < 50; ++trial) {
    const int jobs = std::uniform_int_distribution<int>(2, 40)(rng);
    const int max_batch = std::uniform_int_distribution<int>(1, 160)(rng);
    BatchQueue q;
    std::vector<std::shared_ptr<JobState>> job(jobs);
    std::vector<int> first(jobs), queued(jobs);
    std::vector<std::vector<float>> audio(jobs);
    const absl::Time t0 = absl::Now();
    // Jobs pushed in a shuffled order, so that the batch's job order is not
    // simply the push order.
    std::vector<int> order(jobs);
    for (int j = 0; j < jobs; ++j) order[j] = j;
    std::shuffle(order.begin(), order.end(), rng);
    for (int j : order) {
      job[j] = MakeJob(100 + j);
      first[j] = std::uniform_int_distribution<int>(0, 20)(rng);
      queued[j] = std::uniform_int_distribution<int>(1, 6)(rng);
      audio[j].assign(kWin + kStep * (first[j] + queued[j]), float(j));
      for (int c = 0; c < queued[j]; ++c) {
        q.Push({job[j], first[j] + c, t0});
      }
    }
    // The round-robin's share of each job, from the rule: one window per
    // job in turn (ascending id, from the lowest on a fresh queue) until the
    // batch is full.
    std::vector<int> want(jobs, 0);
    for (int taken = 0, round = 0; taken < max_batch; ++round) {
      bool any = false;
      for (int j = 0; j < jobs && taken < max_batch; ++j) {
        if (want[j] < queued[j] && round < queued[j]) {
          ++want[j];
          ++taken;
          any = true;
        }
      }
      if (!any) break;
    }
    const std::vector<WindowTask> batch = q.PopBatch(max_batch);
    BatchWindows windows;
    std::vector<int> got(jobs, 0);
    int64_t expected_samples = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const int j = static_cast<int>(batch[i].job->id() - 100);
      ASSERT_GE(j, 0);
      ASSERT_LT(j, jobs);
      if (i > 0 && batch[i - 1].job == batch[i].job) {
        EXPECT_EQ(batch[i].window, batch[i - 1].window + 1);
      } else {
        EXPECT_EQ(got[j], 0) << "job " << j << "'s windows are split";
        EXPECT_EQ(batch[i].window, first[j]);
        if (i > 0) EXPECT_LT(batch[i - 1].job->id(), batch[i].job->id());
      }
      ++got[j];
      windows.Add({.id = job[j].get(),
                   .audio = audio[j],
                   .offset = 0,
                   .num_samples = static_cast<int64_t>(audio[j].size()),
                   .step_samples = kStep},
                  batch[i].window);
    }
    for (int j = 0; j < jobs; ++j) {
      EXPECT_EQ(got[j], want[j]) << "job " << j;
      if (want[j] > 0) expected_samples += kStep * (want[j] - 1) + kWin;
    }
    EXPECT_EQ(windows.audio_samples(), expected_samples)
        << jobs << " jobs, batch " << max_batch;
  }
}

}  // namespace
}  // namespace diarization::runtime::internal
