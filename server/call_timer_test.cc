#include "server/call_timer.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace diarization::server {
namespace {

TEST(CallTimer, RunsInTimeOrderNotScheduleOrder) {
  CallTimer timer;
  const absl::Time now = absl::Now();
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  for (int i : {3, 1, 2}) {
    timer.Schedule(now + absl::Milliseconds(40 * i), [&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
      if (order.size() == 3) done.Notify();
    });
  }
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(absl::Now() - now, absl::Milliseconds(120));
}

TEST(CallTimer, CancelBeforeItRunsMeansNever) {
  CallTimer timer;
  std::atomic<int> ran{0};
  const CallTimer::Id id =
      timer.Schedule(absl::Now() + absl::Milliseconds(100), [&] { ++ran; });
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));
  absl::Notification later;
  timer.Schedule(absl::Now() + absl::Milliseconds(200),
                 [&] { later.Notify(); });
  ASSERT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(timer.pending(), 0);
}

TEST(CallTimer, CancelAfterItRanIsFalseAndCallbacksMayReschedule) {
  CallTimer timer;
  absl::Notification second;
  CallTimer::Id first_id = 0;
  absl::Notification first_ran;
  first_id = timer.Schedule(absl::Now(), [&] {
    first_ran.Notify();
    // Re-entrant: schedule from inside a callback.
    timer.Schedule(absl::Now() + absl::Milliseconds(10),
                   [&] { second.Notify(); });
  });
  ASSERT_TRUE(second.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(first_ran.HasBeenNotified());
  EXPECT_FALSE(timer.Cancel(first_id));
}

TEST(CallTimer, ASoonerTimerOvertakesOneWaitedFor) {
  CallTimer timer;
  std::atomic<int> far_ran{0};
  timer.Schedule(absl::Now() + absl::Seconds(60), [&] { ++far_ran; });
  absl::Notification near;
  const absl::Time start = absl::Now();
  timer.Schedule(absl::Now() + absl::Milliseconds(20), [&] { near.Notify(); });
  ASSERT_TRUE(near.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(far_ran.load(), 0);
  // Destruction drops the pending one without running it.
}

}  // namespace
}  // namespace diarization::server
