// Runs the source of a simple CUDA kernel on host threads, so a CPU test (and
// CI, which has no GPU) can check its indexing against a reference. GPU time
// is scarce here; an index slip caught on the host costs none of it.
//
// What it covers: a kernel whose threads talk only through __shared__
// arrays and __syncthreads(), reading with plain loads or __ldg, float and
// float4 arithmetic, one-dimensional grids and blocks. What it does not:
// warp intrinsics (shuffles, votes, wgmma), atomics, cooperative groups,
// memory fences, timing. It says nothing of speed and little of races (the
// host threads run in an arbitrary interleaving; a missing barrier may or
// may not show): compute-sanitizer on the GPU remains the race check.
//
// Use: include this header, then the kernel's own header (an .inc that
// includes nothing of CUDA; conv1d_pool_kernel.inc is the model), then call
// RunEmulatedGrid. The macros below stand for the CUDA keywords there;
// __shared__ arrays become function statics, shared by the block's threads,
// which is right because blocks run one after another.
#ifndef DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_
#define DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_

#include <algorithm>
#include <cmath>
#include <functional>

#define __global__
#define __device__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() ::diarization::testing::EmulatedSyncThreads()

struct alignas(16) float4 {
  float x, y, z, w;
};
struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
// This host thread's place in the emulated grid.
inline thread_local EmulatedDim3 threadIdx, blockIdx;
inline EmulatedDim3 blockDim, gridDim;

template <class T>
T __ldg(const T* p) {
  return *p;
}
inline float __fadd_rn(float a, float b) { return a + b; }
// CUDA's integer min/max in device code.
using std::max;
using std::min;

namespace diarization::testing {

// Every thread of the current block waits here until all have arrived.
void EmulatedSyncThreads();

// Runs `kernel` as `blocks` blocks of `threads` threads (one-dimensional),
// block after block, each block's threads on host threads of their own.
void RunEmulatedGrid(unsigned blocks, unsigned threads,
                     const std::function<void()>& kernel);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_
