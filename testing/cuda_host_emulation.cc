#include "testing/cuda_host_emulation.h"

#include <algorithm>
#include <barrier>
#include <iterator>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace diarization::testing {
namespace {

// The running block (blocks run one at a time).
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes)
      : barrier(threads), shared((shared_bytes + 15) / 16) {
    // Poisoned, as a GPU's is not zeroed: a read of a byte the kernel never
    // wrote gives NaN (float, double) or -1 (integers).
    for (Unit& u : shared)
      std::fill(std::begin(u.bytes), std::end(u.bytes), 0xff);
    // A last, partial warp has only its own lanes.
    for (unsigned w = 0; w * 32 < threads; ++w) {
      warps.push_back(std::make_unique<Warp>(
          static_cast<std::ptrdiff_t>(std::min(32u, threads - w * 32))));
    }
  }
  struct Warp {
    explicit Warp(std::ptrdiff_t lanes) : barrier(lanes) {}
    std::barrier<> barrier;
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

Block::Warp& ThisWarp() { return *block->warps[EmulatedLinearThread() / 32]; }

}  // namespace

void EmulatedSyncThreads() { block->barrier.arrive_and_wait(); }

void EmulatedSyncWarp() { ThisWarp().barrier.arrive_and_wait(); }

uint64_t* EmulatedWarpSlots() { return ThisWarp().slots; }

unsigned char* EmulatedDynamicSharedMemory() {
  return block->shared.empty() ? nullptr : block->shared.front().bytes;
}

void RunEmulatedGrid2d(EmulatedDim3 grid, EmulatedDim3 block_dim,
                       const std::function<void()>& kernel,
                       size_t dynamic_shared_bytes) {
  gridDim = {grid.x, grid.y, 1};
  blockDim = {block_dim.x, block_dim.y, 1};
  const unsigned threads = block_dim.x * block_dim.y;
  for (unsigned by = 0; by < grid.y; ++by) {
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      Block current(threads, dynamic_shared_bytes);
      block = &current;
      std::vector<std::thread> pool;
      pool.reserve(threads);
      for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&kernel, &current, bx, by, t, block_dim] {
          blockIdx = {bx, by, 0};
          threadIdx = {t % block_dim.x, t / block_dim.x, 0};
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
}

void RunEmulatedGrid(unsigned blocks, unsigned threads,
                     const std::function<void()>& kernel,
                     size_t dynamic_shared_bytes) {
  RunEmulatedGrid2d({blocks, 1, 1}, {threads, 1, 1}, kernel,
                    dynamic_shared_bytes);
}

}  // namespace diarization::testing
