#include "engine/runtime/batch_queue.h"

#include <map>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace diarization::runtime::internal {
namespace {

std::shared_ptr<JobState> MakeJob(uint64_t id) {
  return std::make_shared<JobState>(id, JobOptions{}, JobCallbacks{},
                                    /*streaming=*/false, /*device=*/0,
                                    /*ticket=*/0, /*callback_pool=*/nullptr);
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
  for (const WindowTask& t : batch) got[t.job->id].push_back(t.window);
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
  for (const WindowTask& t : next) from_late += t.job->id == 4;
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
  done->terminal.store(true);
  const std::vector<WindowTask> batch = q.PopBatch(32);
  ASSERT_EQ(batch.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(batch[i].job->id, 1u);
    EXPECT_EQ(batch[i].window, i);
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.oldest(), absl::InfiniteFuture());
  q.DropJob(99);  // unknown: no-op
  EXPECT_TRUE(q.PopBatch(4).empty());
}

}  // namespace
}  // namespace diarization::runtime::internal
