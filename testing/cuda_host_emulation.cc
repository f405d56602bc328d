#include "testing/cuda_host_emulation.h"

#include <barrier>
#include <memory>
#include <thread>
#include <vector>

namespace diarization::testing {
namespace {

// The running block (blocks run one at a time).
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes)
      : barrier(threads), shared((shared_bytes + 15) / 16) {
    for (unsigned w = 0; w < threads / 32; ++w) {
      warps.push_back(std::make_unique<Warp>());
    }
  }
  struct Warp {
    std::barrier<> barrier{32};
    uint64_t slots[32] = {};
  };
  std::barrier<> barrier;
  std::vector<std::unique_ptr<Warp>> warps;
  // 16-byte units, so the memory is aligned for float4 and double.
  struct alignas(16) Unit {
    unsigned char bytes[16];
  };
  std::vector<Unit> shared;
};
Block* block = nullptr;

Block::Warp& ThisWarp() { return *block->warps[threadIdx.x / 32]; }

}  // namespace

void EmulatedSyncThreads() { block->barrier.arrive_and_wait(); }

void EmulatedSyncWarp() { ThisWarp().barrier.arrive_and_wait(); }

uint64_t* EmulatedWarpSlots() { return ThisWarp().slots; }

unsigned char* EmulatedDynamicSharedMemory() {
  return block->shared.empty() ? nullptr : block->shared.front().bytes;
}

void RunEmulatedGrid(unsigned blocks, unsigned threads,
                     const std::function<void()>& kernel,
                     size_t dynamic_shared_bytes) {
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  for (unsigned b = 0; b < blocks; ++b) {
    Block current(threads, dynamic_shared_bytes);
    block = &current;
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&kernel, &current, b, t] {
        blockIdx = {b, 0, 0};
        threadIdx = {t, 0, 0};
        kernel();
        // An exited thread no longer counts at its block's or its warp's
        // barriers, as on the GPU.
        current.barrier.arrive_and_drop();
        current.warps[t / 32]->barrier.arrive_and_drop();
      });
    }
    for (std::thread& th : pool) th.join();
    block = nullptr;
  }
}

}  // namespace diarization::testing
