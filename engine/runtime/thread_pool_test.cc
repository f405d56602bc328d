// ThreadPool: every task runs on a pool thread, FIFO or by priority; a
// bounded TryPost, nice, shutdown that runs what is queued; Strand order.
#include "engine/runtime/thread_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace diarization::runtime {
namespace {

TEST(ThreadPool, RejectsBadThreadCounts) {
  EXPECT_FALSE(ThreadPool::Create({.threads = 0}).ok());
  EXPECT_FALSE(ThreadPool::Create({.threads = -3}).ok());
}

TEST(ThreadPool, RunsEveryTaskOnPoolThreads) {
  auto pool = ThreadPool::Create({.threads = 3});
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

TEST(ThreadPool, DestructionRunsQueuedTasks) {
  std::atomic<int> ran{0};
  absl::Notification release;
  {
    auto pool = ThreadPool::Create({.threads = 1});
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

TEST(ThreadPool, PostNeverBlocksOnBusyThreads) {
  auto pool = ThreadPool::Create({.threads = 1});
  ASSERT_TRUE(pool.ok());
  absl::Notification release;
  (*pool)->Post([&] { release.WaitForNotification(); });
  for (int i = 0; i < 100; ++i) (*pool)->Post([] {});
  // We got here while the only thread is blocked: Post did not wait.
  EXPECT_GE((*pool)->queued(), 99);
  release.Notify();
}

TEST(ThreadPool, TryPostRefusesPastMaxQueued) {
  auto pool = ThreadPool::Create({.threads = 1, .max_queued = 3});
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

TEST(ThreadPool, NiceLowersTheThreadsPriority) {
  const int base = ::getpriority(PRIO_PROCESS, 0);
  auto pool = ThreadPool::Create({.threads = 1, .nice = 5});
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
  EXPECT_FALSE(ThreadPool::Create({.threads = 1, .nice = 20}).ok());
  EXPECT_FALSE(ThreadPool::Create({.threads = 1, .max_queued = -1}).ok());
}

TEST(ThreadPool, SmallerPriorityFirstThenPostingOrder) {
  ThreadPool pool(1);
  absl::Notification started, release;
  pool.Post([&] {
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();  // the only thread is busy now
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string name) {
    return [&, name] {
      absl::MutexLock lock(&mu);
      order.push_back(name);
    };
  };
  pool.Post({2, 0}, record("2/0"));
  pool.Post({1, 7}, record("1/7 first"));
  pool.Post(record("plain first"));  // priority {0, 0}
  pool.Post({1, 3}, record("1/3"));
  pool.Post({1, 7}, record("1/7 second"));
  pool.Post(record("plain second"));
  release.Notify();
  pool.Shutdown();
  EXPECT_EQ(order,
            (std::vector<std::string>{"plain first", "plain second", "1/3",
                                      "1/7 first", "1/7 second", "2/0"}));
}

TEST(ThreadPool, ShutdownRunsWhatTasksPostAndIsIdempotent) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  pool.Post([&] {
    pool.Post([&] {
      pool.Post([&] { ++ran; });
      ++ran;
    });
    ++ran;
  });
  pool.Shutdown();
  EXPECT_EQ(ran.load(), 3);
  pool.Shutdown();
}

TEST(ThreadPool, ConstructorTakesAtLeastOneThread) {
  ThreadPool pool(0);
  absl::Notification done;
  pool.Post([&] { done.Notify(); });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(Strand, RunsTasksOneAtATimeInPostingOrder) {
  ThreadPool pool(4);
  constexpr int kStrands = 4;
  constexpr int kTasks = 500;
  std::vector<std::unique_ptr<Strand>> strands;
  std::vector<std::vector<int>> seen(kStrands);
  std::vector<std::atomic<int>> inside(kStrands);
  std::atomic<int> overlaps{0};
  for (int s = 0; s < kStrands; ++s) {
    strands.push_back(std::make_unique<Strand>(&pool));
  }
  for (int i = 0; i < kTasks; ++i) {
    for (int s = 0; s < kStrands; ++s) {
      strands[s]->Post([&, s, i] {
        if (inside[s].fetch_add(1) != 0) ++overlaps;
        seen[s].push_back(i);  // unsynchronized on purpose: one at a time
        inside[s].fetch_sub(1);
      });
    }
  }
  pool.Shutdown();
  EXPECT_EQ(overlaps.load(), 0);
  std::vector<int> expected(kTasks);
  for (int i = 0; i < kTasks; ++i) expected[i] = i;
  for (int s = 0; s < kStrands; ++s) EXPECT_EQ(seen[s], expected) << s;
}

}  // namespace
}  // namespace diarization::runtime
