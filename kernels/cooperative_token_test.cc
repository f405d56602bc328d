// The per-GPU cooperative launch token: one holder at a time per device,
// first come first served, independent devices, stats. CPU only.
#include "kernels/cooperative_token.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

TEST(CooperativeTokenTest, OneHolderPerDeviceAcrossThreads) {
  CooperativeLaunchToken& t = CooperativeLaunchToken::ForDevice(1000);
  EXPECT_EQ(&t, &CooperativeLaunchToken::ForDevice(1000));
  EXPECT_NE(&t, &CooperativeLaunchToken::ForDevice(1001));
  std::atomic<int> inside{0}, max_inside{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        CooperativeLaunchToken::Hold h = t.Acquire();
        const int now = ++inside;
        int m = max_inside.load();
        while (now > m && !max_inside.compare_exchange_weak(m, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        --inside;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(max_inside.load(), 1);
  const CooperativeTokenStats s = t.Stats();
  EXPECT_EQ(s.acquisitions, 400u);
  EXPECT_GT(s.contended, 0u);
  EXPECT_GT(s.wait_ns, 0u);
}

TEST(CooperativeTokenTest, FirstComeFirstServedAndOtherDevicesFree) {
  CooperativeLaunchToken& t = CooperativeLaunchToken::ForDevice(2000);
  CooperativeLaunchToken::Hold first = t.Acquire();
  // Another device's token is free while this one is held.
  {
    CooperativeLaunchToken::Hold other =
        CooperativeLaunchToken::ForDevice(2001).Acquire();
  }
  std::vector<int> order;
  std::mutex mu;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      CooperativeLaunchToken::Hold h = t.Acquire();
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    // Let waiter i take its ticket before waiter i + 1.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  EXPECT_TRUE(order.empty());
  first.Release();
  EXPECT_FALSE(first.held());
  for (auto& w : waiters) w.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  // Moving a hold moves the ownership; a moved-from hold releases nothing.
  CooperativeLaunchToken::Hold a = t.Acquire();
  CooperativeLaunchToken::Hold b = std::move(a);
  EXPECT_FALSE(a.held());
  EXPECT_TRUE(b.held());
}

}  // namespace
}  // namespace diarization::kernels
