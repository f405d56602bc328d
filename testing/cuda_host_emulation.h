// Runs the source of a CUDA kernel on host threads, so a CPU test (and CI,
// which has no GPU) can check its logic against a reference. GPU time is
// scarce here; an index slip or a wrong merge caught on the host costs none
// of it.
//
// What it covers: one- and two-dimensional grids and blocks; __shared__ arrays
// (static and the dynamic one, through DynamicSharedMemory()) and
// __syncthreads(); the warp operations __shfl_sync, __shfl_down_sync,
// __ballot_sync and __syncwarp over full warps; atomicOr and atomicAdd on
// 32-bit words; float2 and float4; __ldg, __ffs, __longlong_as_double and the
// double round-to-nearest intrinsics (host doubles round to nearest; the test
// binary must not contract into FMA, which the toolchain's flags already
// ensure: no -ffp-contract=fast, no FMA target). What it does not: partial
// warp masks, cooperative groups, wgmma or other tensor-core instructions,
// memory fences beyond the barriers, timing. It says nothing of speed and
// little of races (the host threads interleave arbitrarily; a missing
// barrier may or may not show): compute-sanitizer on the GPU remains the
// race check.
//
// Use: include this header (after CUDA's headers if the test includes any),
// then the kernel's source (an .inc that includes nothing of CUDA and takes
// its dynamic shared memory from DynamicSharedMemory(); the .cu defines that
// function for nvcc before including the .inc), then call RunEmulatedGrid.
// The macros below stand for the CUDA keywords there; __shared__ arrays
// become function statics, shared by the block's threads, which is right
// because blocks run one after another. A block's threads are host threads,
// so blocks of 1024 threads work but are slow (a barrier costs about a
// millisecond on two cores): keep emulated problems small.
#ifndef DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_
#define DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

// CUDA's host headers, when included first, define these for g++ as
// attributes it ignores or rejects; here they are plain host code.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#undef __forceinline__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __shared__ static
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() ::diarization::testing::EmulatedSyncThreads()

#ifndef __VECTOR_TYPES_H__  // CUDA's vector_types.h defines them
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
#endif
struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
// This host thread's place in the emulated grid.
inline thread_local EmulatedDim3 threadIdx, blockIdx;
inline EmulatedDim3 blockDim, gridDim;

namespace diarization::testing {

// Every thread of the current block waits here until all have arrived.
void EmulatedSyncThreads();
// The calling thread's warp: every lane (thread) of it that has not exited
// waits until all have arrived.
void EmulatedSyncWarp();
// The warp's exchange slots (32 × 8 bytes) of the calling thread's warp.
uint64_t* EmulatedWarpSlots();
// The current block's dynamic shared memory (RunEmulatedGrid's size,
// 16-byte aligned, filled with 0xff bytes for each block: NaN or -1 where
// a kernel reads what it never wrote).
unsigned char* EmulatedDynamicSharedMemory();

// Runs `kernel` as `blocks` blocks of `threads` threads (one-dimensional),
// block after block, each block's threads on
// host threads of their own, with `dynamic_shared_bytes` of dynamic shared
// memory.
void RunEmulatedGrid(unsigned blocks, unsigned threads,
                     const std::function<void()>& kernel,
                     size_t dynamic_shared_bytes = 0);
// The same over a two-dimensional grid and block (z = 1), blocks in
// row-major order (y, then x); a thread's warp is its linear index
// (x + y · block.x) / 32, as on the GPU.
void RunEmulatedGrid2d(EmulatedDim3 grid, EmulatedDim3 block,
                       const std::function<void()>& kernel,
                       size_t dynamic_shared_bytes = 0);

// The calling thread's linear index in its block.
inline int EmulatedLinearThread() {
  return static_cast<int>(threadIdx.x + threadIdx.y * blockDim.x);
}

template <class T>
T EmulatedShuffle(T v, int from_lane_offset, bool down) {
  static_assert(sizeof(T) <= 8);
  uint64_t* slots = EmulatedWarpSlots();
  const int lane = EmulatedLinearThread() & 31;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  slots[lane] = bits;
  EmulatedSyncWarp();
  const int src = down ? lane + from_lane_offset : from_lane_offset;
  T out = v;
  if (src >= 0 && src < 32) std::memcpy(&out, &slots[src], sizeof(T));
  EmulatedSyncWarp();  // the slots are free again
  return out;
}

}  // namespace diarization::testing

inline unsigned char* DynamicSharedMemory() {
  return ::diarization::testing::EmulatedDynamicSharedMemory();
}

template <class T>
T __ldg(const T* p) {
  return *p;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __longlong_as_double(long long v) {
  return std::bit_cast<double>(v);
}
inline int __ffs(unsigned v) { return v == 0 ? 0 : std::countr_zero(v) + 1; }
inline int __ffs(int v) { return __ffs(static_cast<unsigned>(v)); }
inline unsigned atomicOr(unsigned* p, unsigned v) {
  return std::atomic_ref<unsigned>(*p).fetch_or(v);
}
inline int atomicAdd(int* p, int v) {
  return std::atomic_ref<int>(*p).fetch_add(v);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::diarization::testing::EmulatedSyncWarp();
}
template <class T>
T __shfl_sync(unsigned, T v, int src_lane) {
  return ::diarization::testing::EmulatedShuffle(v, src_lane, false);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta) {
  return ::diarization::testing::EmulatedShuffle(v, static_cast<int>(delta),
                                                 true);
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  uint64_t* slots = ::diarization::testing::EmulatedWarpSlots();
  const int lane = ::diarization::testing::EmulatedLinearThread() & 31;
  slots[lane] = predicate != 0;
  ::diarization::testing::EmulatedSyncWarp();
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l) bits |= static_cast<unsigned>(slots[l]) << l;
  ::diarization::testing::EmulatedSyncWarp();
  return bits;
}
// CUDA's integer min/max in device code.
using std::max;
using std::min;

#endif  // DIARIZATION_TESTING_CUDA_HOST_EMULATION_H_
