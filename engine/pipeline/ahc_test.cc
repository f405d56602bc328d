#include "engine/pipeline/ahc.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "engine/common/openblas_threads.h"
#include "engine/io/fixture.h"
#include "engine/io/npy.h"
#include "engine/pipeline/ahc_blockwise.h"
#include "engine/pipeline/train_filter.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

TEST(AhcTest, CentroidLinkageOnALineByHand) {
  // 1-d points 0, 1, 3: merge (0,1) at 1 → centroid 0.5, then at 2.5.
  const std::vector<float> x = {0, 1, 3};
  std::vector<double> d = PdistEuclidean(x, 3, 1);
  EXPECT_EQ(d, (std::vector<double>{1, 3, 2}));
  const auto z = CentroidLinkage(d, 3);
  ASSERT_EQ(z.size(), 2u);
  EXPECT_EQ(z[0].a, 0);
  EXPECT_EQ(z[0].b, 1);
  EXPECT_DOUBLE_EQ(z[0].distance, 1.0);
  EXPECT_EQ(z[1].a, 2);
  EXPECT_EQ(z[1].b, 3);
  EXPECT_DOUBLE_EQ(z[1].distance, 2.5);
  EXPECT_EQ(FclusterDistance(z, 3, 2.0), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(FclusterDistance(z, 3, 2.5),
            (std::vector<int>{1, 1, 1}));  // inclusive
  EXPECT_EQ(FclusterDistance(z, 3, 0.5),
            (std::vector<int>{1, 2, 3}));  // DFS order
}

TEST(AhcTest, InversionIsHandledByTheSubtreeMaximum) {
  // (0,0), (1,0), (0.5,0.9): merge at 1.0, then the centroid (0.5,0) is at
  // 0.9 from the third point: a height below its child's.
  const std::vector<float> x = {0, 0, 1, 0, 0.5f, 0.9f};
  std::vector<double> d = PdistEuclidean(x, 3, 2);
  const auto z = CentroidLinkage(d, 3);
  ASSERT_EQ(z.size(), 2u);
  EXPECT_NEAR(z[1].distance, 0.9, 1e-7);
  // t = 0.95 ≥ the root's own height, but the subtree holds a 1.0 merge.
  EXPECT_EQ(FclusterDistance(z, 3, 0.95), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(FclusterDistance(z, 3, 1.0), (std::vector<int>{1, 1, 1}));
}

TEST(AhcTest, HeightsEqualCentroidDistancesOnRandomData) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int n = 60, dim = 5;
  std::vector<float> x(n * dim);
  for (float& v : x) v = g(rng);
  std::vector<double> d = PdistEuclidean(x, n, dim);
  const auto z = CentroidLinkage(d, n);
  // Recompute each merge from the member centroids (independent of the
  // Lance–Williams recursion).
  std::vector<std::vector<int>> members(2 * n - 1);
  for (int i = 0; i < n; ++i) members[i] = {i};
  auto centroid = [&](const std::vector<int>& m) {
    std::vector<double> c(dim, 0.0);
    for (int i : m) {
      for (int t = 0; t < dim; ++t) c[t] += x[i * dim + t];
    }
    for (double& v : c) v /= m.size();
    return c;
  };
  for (size_t k = 0; k < z.size(); ++k) {
    const auto ca = centroid(members[z[k].a]), cb = centroid(members[z[k].b]);
    double s = 0;
    for (int t = 0; t < dim; ++t) s += (ca[t] - cb[t]) * (ca[t] - cb[t]);
    EXPECT_NEAR(z[k].distance, std::sqrt(s), 1e-9) << k;
    members[n + k] = members[z[k].a];
    members[n + k].insert(members[n + k].end(), members[z[k].b].begin(),
                          members[z[k].b].end());
    EXPECT_EQ(z[k].size, static_cast<int>(members[n + k].size()));
  }
}

// Every entry of PdistSquare, both triangles, is scipy's loop (each pair's
// squared float64 differences summed in coordinate order, then the square
// root) to the bit, above 1024 points too (once the Gram form's domain),
// on any number of threads (the rows split over OpenBLAS's count: a row
// range skipped or done twice would show), for fresh random rows.
TEST(AhcTest, DistancesAreScipysLoopOnAnyNumberOfThreads) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int before = openblas_get_num_threads();
  for (const int n : {1500, 2049}) {
    const int dim = 16;
    std::vector<float> x(static_cast<size_t>(n) * dim);
    for (float& v : x) v = g(rng);
    for (const int threads : {1, 2, 3, 7}) {
      openblas_set_num_threads(threads);
      const SquareMatrix m = PdistSquare(x, n, dim);
      int wrong = 0;
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          double s = 0;
          for (int t = 0; t < dim; ++t) {
            const double diff = double{x[i * dim + t]} - double{x[j * dim + t]};
            s += diff * diff;
          }
          const double want = i == j ? 0.0 : std::sqrt(s);
          wrong += std::memcmp(&m[static_cast<size_t>(i) * n + j], &want,
                               sizeof want) != 0;
        }
      }
      EXPECT_EQ(wrong, 0) << "n " << n << ", " << threads << " threads";
    }
  }
  openblas_set_num_threads(before);
}

// An accelerator whose calls compute the host's distances and merges from
// the rows they are given, or fail. With `wait_for`, a call first waits (up
// to 10 s) for that flag and records whether it saw it set while running
// (so work the caller starts beside the call provably runs beside it).
// `busy`: every Reserve is turned away.
class LendingAccelerator : public LinkageAccelerator {
 public:
  struct Behaviour {
    bool fail = false;
    bool busy = false;
    const std::atomic<bool>* wait_for = nullptr;
  };
  explicit LendingAccelerator(Behaviour behaviour) : behaviour_(behaviour) {}
  int max_n() const override { return 4096; }
  std::unique_ptr<Call> Reserve(int n, int d) override {
    if (behaviour_.busy) return nullptr;
    ++reserved;
    return std::make_unique<LentCall>(this, n, d);
  }
  int reserved = 0, ran = 0;
  bool saw_flag_during_run = false;
  std::vector<float> rows_seen;

 private:
  class LentCall : public Call {
   public:
    LentCall(LendingAccelerator* owner, int n, int d)
        : owner_(owner), n_(n), d_(d) {}
    bool Run(std::span<const float> rows, std::vector<Merge>* merges) override {
      ++owner_->ran;
      if (const std::atomic<bool>* flag = owner_->behaviour_.wait_for) {
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!flag->load() && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        owner_->saw_flag_during_run = flag->load();
      }
      owner_->rows_seen.assign(rows.begin(), rows.end());
      if (owner_->behaviour_.fail) return false;
      SquareMatrix m =
          PdistSquare(rows.first(static_cast<size_t>(n_) * d_), n_, d_);
      *merges = CentroidLinkageSquare(m, n_);
      return true;
    }

   private:
    LendingAccelerator* owner_;
    int n_, d_;
  };
  Behaviour behaviour_;
};

// AhcCluster hands the accelerator the unit rows (NormalizeRowsF32's, all
// n × d of them); the labels are the host's whether the call succeeds or
// fails (then the host computes the distances and merges itself), below and
// above 1024 points.
TEST(AhcTest, AnAcceleratorGetsTheUnitRowsAndGivesTheHostLabels) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  for (const int n : {300, 1500}) {
    const int dim = 32;
    std::vector<float> x(static_cast<size_t>(n) * dim);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = g(rng) + 2.0f * static_cast<float>((i / dim) % 4 == i % 3);
    }
    const std::vector<int> host = AhcCluster(x, n, dim);
    for (const bool fail : {false, true}) {
      LendingAccelerator lender({.fail = fail});
      AhcOptions options;
      options.accelerator = &lender;
      AhcTimes times;
      EXPECT_EQ(AhcCluster(x, n, dim, options, &times), host)
          << "n " << n << (fail ? ", failed call" : "");
      EXPECT_EQ(lender.reserved, 1);
      EXPECT_EQ(lender.ran, 1);
      EXPECT_EQ(times.accelerated, !fail);
      EXPECT_EQ(lender.rows_seen, NormalizeRowsF32(x, n, dim)) << "n " << n;
    }
  }
}

// AhcOptions::beside_linkage runs exactly once on every path: beside an
// accelerator's call (which sees it start while it runs), after the host's
// linkage when the accelerator is busy or absent, and after the blockwise
// variant; the labels are the host's on each.
TEST(AhcTest, BesideLinkageWorkRunsOnceAndBesideTheDevice) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int n = 700, dim = 16;
  std::vector<float> x(static_cast<size_t>(n) * dim);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = g(rng) + 3.0f * static_cast<float>((i / dim) % 3 == i % 2);
  }
  const std::vector<int> host = AhcCluster(x, n, dim);
  for (const int path : {0, 1, 2}) {  // accelerator, busy one, none
    std::atomic<bool> beside_started{false};
    LendingAccelerator device({.busy = path == 1, .wait_for = &beside_started});
    std::atomic<int> runs{0};
    AhcOptions options;
    if (path < 2) options.accelerator = &device;
    options.beside_linkage = [&] {
      runs.fetch_add(1);
      beside_started.store(true);
    };
    AhcTimes times;
    EXPECT_EQ(AhcCluster(x, n, dim, options, &times), host) << "path " << path;
    EXPECT_EQ(runs.load(), 1) << "path " << path;
    EXPECT_EQ(times.accelerated, path == 0);
    if (path == 0) EXPECT_TRUE(device.saw_flag_during_run);
  }
  std::atomic<int> runs{0};
  AhcOptions blockwise;
  blockwise.exact_max_n = 100;
  blockwise.block_size = 256;
  blockwise.beside_linkage = [&] { runs.fetch_add(1); };
  AhcCluster(x, n, dim, blockwise);
  EXPECT_EQ(runs.load(), 1) << "blockwise";
}

// Same partition up to renaming.
bool SamePartition(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size()) return false;
  std::map<int, int> f, r;
  for (size_t i = 0; i < a.size(); ++i) {
    if (f.emplace(a[i], b[i]).first->second != b[i]) return false;
    if (r.emplace(b[i], a[i]).first->second != a[i]) return false;
  }
  return true;
}

TEST(AhcTest, BlockwiseEqualsExactWhenOneBlockHoldsEverything) {
  auto in = io::LoadFinditFixture(diarization::testing::TestDataDir() +
                                  "/findit-dia-parity/01_dialogue");
  ASSERT_TRUE(in.ok()) << in.status();
  const TrainSet t =
      FilterTrainEmbeddings(in->segmentations, in->embeddings, in->num_windows);
  const int n = t.size();
  std::vector<float> train(n * 256);
  for (int i = 0; i < n; ++i) {
    std::copy_n(
        in->embeddings.data() + (t.window_idx[i] * 3 + t.speaker_idx[i]) * 256,
        256, train.data() + i * 256);
  }
  const std::vector<float> normed = NormalizeRowsF32(train, n, 256);
  std::vector<double> d = PdistEuclidean(normed, n, 256);
  const auto exact = FclusterDistance(CentroidLinkage(d, n), n, 0.6);
  // pyannote's answer (ahc_init_labels) is the exact path's.
  auto want =
      io::ReadNpyFile(diarization::testing::TestDataDir() +
                      "/findit-dia-parity/01_dialogue/ahc_init_labels.npy");
  ASSERT_TRUE(want.ok());
  std::vector<int> want_labels;
  for (int64_t v : want->ToInt64()) want_labels.push_back(static_cast<int>(v));
  EXPECT_TRUE(SamePartition(exact, want_labels));
  EXPECT_EQ(BlockwiseCentroidFcluster(normed, n, 256, 0.6, n), exact);
  // The forced bounded-memory path through AhcCluster for n above the limit.
  AhcOptions small;
  small.exact_max_n = 8;
  small.block_size = n + 1;
  EXPECT_EQ(AhcCluster(train, n, 256, small), want_labels);
}

TEST(AhcTest, BlockwiseFindsTheExactPartitionOfSeparatedSpeakers) {
  // Five "speakers" (tight groups on the unit sphere, well apart relative to
  // the 0.6 threshold), interleaved in time like turns; several blocks.
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  const int speakers = 5, n = 700, dim = 32;
  std::vector<std::vector<float>> centre(speakers, std::vector<float>(dim));
  for (auto& c : centre) {
    for (float& v : c) v = g(rng);
  }
  std::vector<float> x;
  std::vector<int> truth;
  for (int i = 0; i < n; ++i) {
    const int s = (i / 13) % speakers;
    truth.push_back(s);
    double norm = 0;
    for (int t = 0; t < dim; ++t) norm += centre[s][t] * centre[s][t];
    for (int t = 0; t < dim; ++t)
      x.push_back(centre[s][t] / std::sqrt(norm) + 0.02f * g(rng));
  }
  const std::vector<float> normed = NormalizeRowsF32(x, n, dim);
  std::vector<double> d = PdistEuclidean(normed, n, dim);
  const auto exact = FclusterDistance(CentroidLinkage(d, n), n, 0.6);
  EXPECT_TRUE(SamePartition(exact, truth));
  for (int block : {64, 150, 333}) {
    EXPECT_TRUE(SamePartition(
        BlockwiseCentroidFcluster(normed, n, dim, 0.6, block), exact))
        << "block " << block;
  }
}

}  // namespace
}  // namespace diarization::pipeline
