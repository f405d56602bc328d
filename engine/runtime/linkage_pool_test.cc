#include "engine/runtime/linkage_pool.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::runtime {
namespace {

namespace dp = diarization::pipeline;

// Answers with the host's distances and linkage unless told it
// is busy; counts the reservations it was asked for.
class FakeAccelerator : public dp::LinkageAccelerator {
 public:
  FakeAccelerator(int max_n, bool busy) : max_n_(max_n), busy_(busy) {}
  int max_n() const override { return max_n_; }
  std::unique_ptr<Call> Reserve(int n, int d) override {
    ++calls;
    if (busy_) return nullptr;
    return std::make_unique<HostCall>(n, d);
  }
  int calls = 0;

 private:
  class HostCall : public Call {
   public:
    HostCall(int n, int d) : n_(n), d_(d) {}
    bool Run(std::span<const float> rows,
             std::vector<dp::Merge>* merges) override {
      dp::SquareMatrix m = dp::PdistSquare(rows, n_, d_);
      *merges = dp::CentroidLinkageSquare(m, n_);
      return true;
    }

   private:
    int n_, d_;
  };
  int max_n_;
  bool busy_;
};

std::vector<float> Points(int n, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(n) * d);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(LinkagePool, FirstMemberThatTakesTheCallAnswersElseTheHost) {
  auto busy = std::make_shared<FakeAccelerator>(4096, true);
  auto small = std::make_shared<FakeAccelerator>(100, false);
  auto big = std::make_shared<FakeAccelerator>(2000, false);
  LinkagePool pool({busy, nullptr, small, big});
  EXPECT_FALSE(pool.empty());
  EXPECT_EQ(pool.max_n(), 4096);
  const int d = 16;
  const uint64_t seed = std::random_device{}();
  for (int n : {50, 1500}) {
    const std::vector<float> x = Points(n, d, seed + n);
    dp::AhcOptions o;
    o.accelerator = &pool;
    dp::AhcTimes t;
    const std::vector<int> labels = dp::AhcCluster(x, n, d, o, &t);
    EXPECT_EQ(labels, dp::AhcCluster(x, n, d)) << "n " << n;
    EXPECT_TRUE(t.accelerated) << "n " << n;
  }
  EXPECT_EQ(busy->calls, 2);   // asked first both times, refused
  EXPECT_EQ(small->calls, 1);  // n 50 only
  EXPECT_EQ(big->calls, 1);    // n 1500 (too large for `small`)

  // Nobody takes n 3000: the host answers, the same labels.
  const int n = 3000;
  const std::vector<float> x = Points(n, d, seed);
  dp::AhcOptions o;
  o.accelerator = &pool;
  dp::AhcTimes t;
  EXPECT_EQ(dp::AhcCluster(x, n, d, o, &t), dp::AhcCluster(x, n, d));
  EXPECT_FALSE(t.accelerated);
  EXPECT_EQ(busy->calls, 3);
}

TEST(LinkagePool, EmptyPoolTakesNothing) {
  LinkagePool pool({nullptr});
  EXPECT_TRUE(pool.empty());
  EXPECT_EQ(pool.max_n(), 0);
}

}  // namespace
}  // namespace diarization::runtime
