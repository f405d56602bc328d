#include "testing/cuda_host_emulation.h"

#include <barrier>
#include <thread>
#include <vector>

namespace diarization::testing {
namespace {

// The running block's barrier (blocks run one at a time).
std::barrier<>* block_barrier = nullptr;

}  // namespace

void EmulatedSyncThreads() { block_barrier->arrive_and_wait(); }

void RunEmulatedGrid(unsigned blocks, unsigned threads,
                     const std::function<void()>& kernel) {
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  for (unsigned b = 0; b < blocks; ++b) {
    std::barrier<> barrier(threads);
    block_barrier = &barrier;
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&kernel, b, t] {
        blockIdx = {b, 0, 0};
        threadIdx = {t, 0, 0};
        kernel();
        // An exited thread no longer counts at the block's barriers, as on
        // the GPU.
        block_barrier->arrive_and_drop();
      });
    }
    for (std::thread& th : pool) th.join();
    block_barrier = nullptr;
  }
}

}  // namespace diarization::testing
