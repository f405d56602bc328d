#include "server/work_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace diarization::server {
namespace {

TEST(WorkPool, RejectsBadThreadCounts) {
  EXPECT_FALSE(WorkPool::Create(0).ok());
  EXPECT_FALSE(WorkPool::Create(-3).ok());
}

TEST(WorkPool, RunsEveryTaskOnPoolThreads) {
  auto pool = WorkPool::Create(3);
  ASSERT_TRUE(pool.ok());
  constexpr int kTasks = 1000;
  std::atomic<int> sum{0};
  std::atomic<int> on_caller{0};
  const std::thread::id caller = std::this_thread::get_id();
  absl::BlockingCounter done(kTasks);
  for (int i = 1; i <= kTasks; ++i) {
    (*pool)->Post([&, i] {
      sum += i;
      if (std::this_thread::get_id() == caller) ++on_caller;
      done.DecrementCount();
    });
  }
  done.Wait();
  EXPECT_EQ(sum.load(), kTasks * (kTasks + 1) / 2);
  EXPECT_EQ(on_caller.load(), 0);
}

TEST(WorkPool, DestructionRunsQueuedTasks) {
  std::atomic<int> ran{0};
  absl::Notification release;
  {
    auto pool = WorkPool::Create(1);
    ASSERT_TRUE(pool.ok());
    // The first task blocks the only thread; the rest queue behind it.
    (*pool)->Post([&] {
      release.WaitForNotification();
      ++ran;
    });
    for (int i = 0; i < 10; ++i) (*pool)->Post([&] { ++ran; });
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 11);
}

TEST(WorkPool, PostNeverBlocksOnBusyThreads) {
  auto pool = WorkPool::Create(1);
  ASSERT_TRUE(pool.ok());
  absl::Notification release;
  (*pool)->Post([&] { release.WaitForNotification(); });
  for (int i = 0; i < 100; ++i) (*pool)->Post([] {});
  // We got here while the only thread is blocked: Post did not wait.
  EXPECT_GE((*pool)->queued(), 99);
  release.Notify();
}

TEST(WorkPool, TryPostRefusesPastMaxQueued) {
  auto pool = WorkPool::Create({.threads = 1, .max_queued = 3});
  ASSERT_TRUE(pool.ok());
  absl::Notification started, release;
  ASSERT_TRUE((*pool)->TryPost([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();  // running, so no longer queued
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*pool)->TryPost([&] { ++ran; }));
  EXPECT_FALSE((*pool)->TryPost([&] { ran += 100; }));
  EXPECT_EQ((*pool)->queued(), 3);
  release.Notify();
  pool->reset();
  EXPECT_EQ(ran.load(), 3);
}

TEST(WorkPool, NiceLowersTheThreadsPriority) {
  const int base = ::getpriority(PRIO_PROCESS, 0);
  auto pool = WorkPool::Create({.threads = 1, .nice = 5});
  ASSERT_TRUE(pool.ok());
  std::atomic<int> seen{-100};
  absl::Notification done;
  (*pool)->Post([&] {
    seen =
        ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(seen.load(), std::min(base + 5, 19));
  EXPECT_FALSE(WorkPool::Create({.threads = 1, .nice = 20}).ok());
  EXPECT_FALSE(WorkPool::Create({.threads = 1, .max_queued = -1}).ok());
}

}  // namespace
}  // namespace diarization::server
