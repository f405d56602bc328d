// The per-GPU token for cooperative launches (thread-block clusters that
// exchange data every step, grid-wide barriers): one such grid in flight per
// GPU, across every pipeline of the process.
//
// Why. A cluster's CTAs are co-scheduled by the hardware, so a cluster
// launch cannot deadlock, but two pipelines' persistent grids on one GPU
// each sized for a share of the device would contend for the same SMs, and
// a grid-barrier kernel would deadlock if it were not fully resident. The
// rule (docs/architecture.md "Cooperative launches"):
//  1. the token belongs to the device ordinal, not to a pipeline: every
//     pipeline (runtime::Device "cuda:0/p1", ...) of a GPU shares it;
//  2. a caller holds it from before it enqueues the cooperative grid until
//     that grid has completed (for the segmentation model: the batch's
//     graph launch through its stream synchronize), and enqueues nothing
//     cooperative without it;
//  3. the grid is sized from the occupancy API, taking at most a share of
//     the device's co-resident clusters (kernels/lstm_cluster.h), so the
//     non-cooperative work of the other pipelines and stages keeps SMs;
//  4. waiters are served first come, first served (a ticket lock), so no
//     pipeline starves.
// The token is host-side and blocking; it adds the wait to the holder's
// latency, which the GPU round measures (bench/gpu/parts/qualify.sh).
#ifndef DIARIZATION_KERNELS_COOPERATIVE_TOKEN_H_
#define DIARIZATION_KERNELS_COOPERATIVE_TOKEN_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace diarization::kernels {

struct CooperativeTokenStats {
  uint64_t acquisitions = 0;
  uint64_t contended = 0;  // acquisitions that had to wait
  uint64_t wait_ns = 0;    // total time spent waiting
  uint64_t max_wait_ns = 0;
};

class CooperativeLaunchToken {
 public:
  // The token of GPU `ordinal` (created on first use, never destroyed).
  static CooperativeLaunchToken& ForDevice(int ordinal);

  // Holds the token for its lifetime (movable, not copyable).
  class Hold {
   public:
    Hold() = default;
    explicit Hold(CooperativeLaunchToken* token) : token_(token) {}
    Hold(Hold&& o) noexcept : token_(o.token_) { o.token_ = nullptr; }
    Hold& operator=(Hold&& o) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { Release(); }
    void Release();
    bool held() const { return token_ != nullptr; }

   private:
    CooperativeLaunchToken* token_ = nullptr;
  };

  // Blocks until the caller holds the token (first come, first served).
  Hold Acquire();
  CooperativeTokenStats Stats() const;

  CooperativeLaunchToken() = default;
  CooperativeLaunchToken(const CooperativeLaunchToken&) = delete;
  CooperativeLaunchToken& operator=(const CooperativeLaunchToken&) = delete;

 private:
  void Unlock();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 0;
  uint64_t serving_ = 0;
  CooperativeTokenStats stats_;
};

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_COOPERATIVE_TOKEN_H_
