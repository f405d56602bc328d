#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/conv3x3_c32.h"

namespace diarization::kernels {
namespace {

constexpr int kC = kConv3x3C32Channels;
constexpr int kTaps = 9;
constexpr int kKStepsPerTap = kC / 8;                // 8 channels per k-step
constexpr int kKSteps = kTaps * kKStepsPerTap;       // 36
constexpr int kKStepBytes = kC * 8 * 4;              // B of one k-step: 1 KiB
constexpr int kWeightBytes = kKSteps * kKStepBytes;  // 36 KiB
static_assert(kWeightBytes == kConv3x3C32PackedFloats * 4);
constexpr int kSegment = 64;  // output pixels per warpgroup: one wgmma M
constexpr int kInW = kSegment + 2;
constexpr int kPixelBytes = kC * 4;

// Output channel of the mma's logical column n (8-column chunk i = n / 8,
// column c = n % 8). Chosen so that lane (g, t)'s accumulators of the four
// chunks (columns 2t, 2t + 1 of each) are channels 8t .. 8t + 7: the
// epilogue stores each output pixel's 8 channels as two float4.
__host__ __device__ constexpr int PhysicalChannel(int n) {
  const int i = n / 8, c = n % 8;
  return 8 * (c >> 1) + 2 * i + (c & 1);
}

// Where wgmma's A operand (pixels × channels of one tap) comes from.
enum AMode : int {
  // Registers: each warp loads its fragments from the staged tile.
  kARegisters = 0,
  // Shared memory through a descriptor: the tile staged in wgmma's 128-byte
  // swizzled K-major layout (a pixel's 128 bytes are one row), each tap's
  // 64 rows starting at any pixel, with the descriptor's base offset 0: the
  // hardware takes the swizzle pattern's phase from the absolute address
  // bits. (The other reading of the PTX text, the base offset set to the
  // start's phase, (address >> 7) & 7, gave wrong outputs on the H200,
  // 0.45 relative error, 2026-12-04.)
  kAShared = 1,
};

// Input channel of logical k (0..7) in k-step s of a tap.
// kARegisters: lane (g, t)'s A registers a0 (k = t) and a2 (k = t + 4) of
// the two k-steps 2p and 2p + 1 hold channels 16p + 4t .. 16p + 4t + 3: one
// 128-bit shared-memory load per pixel row and pair of k-steps. From shared
// memory: k-step s reads channels 8s .. 8s + 7 in order (bytes 32s .. 32s +
// 31 of the pixel's row).
constexpr int InputChannel(int s, int k, bool registers) {
  if (!registers) return 8 * s + k;
  const int p = s / 2, j = s % 2;
  return 16 * p + 4 * (k % 4) + 2 * j + (k / 4);
}

// Byte offset of B[k][n] (logical) in a k-step's 1 KiB: wgmma's K-major
// layout without swizzle, core matrices of 8 rows (n) × 16 bytes (4 k),
// the two core matrices along K 128 bytes apart (the descriptor's leading
// byte offset), the four along N 256 bytes apart (its stride byte offset).
constexpr int BOffset(int n, int k) {
  return (n / 8) * 256 + (k / 4) * 128 + (n % 8) * 16 + (k % 4) * 4;
}
constexpr uint64_t kLeadingByteOffset = 128;
constexpr uint64_t kStrideByteOffset = 256;

// cvt.rna.tf32.f32's rounding (to nearest, ties away from zero, on the
// magnitude) as two integer operations: half a TF32 ulp added to the bit
// pattern, the 13 low bits cleared; a carry into the exponent is the correct
// rounding up. ptxas expands the cvt to three per value (it also tests for
// infinity and NaN), and the kernel rounds 48 values per thread and tile:
// the SASS of the tile loop had ~1,020 instructions per warp with the
// schedulers issuing in 44 % of cycles (ncu, 2026-12-04), so the count
// matters. Identical results for every finite value and for infinities
// (RoundToTf32 is the same operation); a NaN stays NaN unless its payload
// lies only in the 13 low bits, which becomes an infinity: still not finite.
__device__ __forceinline__ uint32_t ToTf32(float v) {
  return (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
}

__device__ __forceinline__ uint32_t SmemAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Shared-memory matrix descriptor of one k-step's B (no swizzle).
__device__ __forceinline__ uint64_t BDescriptor(uint32_t address) {
  return uint64_t{(address & 0x3FFFF) >> 4} |
         ((kLeadingByteOffset >> 4) << 16) | ((kStrideByteOffset >> 4) << 32);
}

// The descriptor of k-step `ks` from that of k-step 0 (`desc0`, the filter
// bank's start): the address field (bits 0-13, bytes / 16) advances by
// ks KiB. No carry leaves the field: the bank ends inside the CTA's shared
// memory (< 228 KiB, the field spans 256 KiB). With ks known at compile
// time this is one add per wgmma instead of the four or five uniform
// operations BDescriptor(address) compiled to each time.
__device__ __forceinline__ uint64_t BDescriptorAt(uint64_t desc0, int ks) {
  return desc0 + static_cast<uint64_t>(ks * (kKStepBytes >> 4));
}

// Shared-memory descriptor of A for kAShared (128-byte swizzle, K-major:
// rows 128 bytes apart, 8-row groups 1024 bytes apart; the leading byte
// offset is unused for K-major swizzled layouts; base offset 0).
__device__ __forceinline__ uint64_t ADescriptor(uint32_t address) {
  return uint64_t{(address & 0x3FFFF) >> 4} | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// The compiler does not know that wgmma reads its register operands and
// writes its accumulators after the instruction issues: these empty asm
// statements keep each value in its register across the asynchronous window
// (the same device CUTLASS uses, warpgroup_fence_operand).
__device__ __forceinline__ void FenceOperand(uint32_t& r) {
  asm volatile("" : "+r"(r)::"memory");
}
__device__ __forceinline__ void FenceOperand(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}

// D (64 × 32, FP32) += A (64 × 8 TF32, registers) · B (8 × 32 TF32, shared
// memory through `desc`), one warpgroup.
__device__ __forceinline__ void WgmmaTf32(float (&d)[16],
                                          const uint32_t (&a)[4],
                                          uint64_t desc) {
  // scale-d = true (D accumulates; the caller zeroes it first),
  // imm-scale-a = imm-scale-b = 1.
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
        "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]),
        "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc)
      : "memory");
}

// D (64 × 32, FP32) += A (64 × 8 TF32, shared memory through `adesc`) ·
// B (8 × 32 TF32, shared memory through `bdesc`), one warpgroup.
__device__ __forceinline__ void WgmmaTf32Smem(float (&d)[16], uint64_t adesc,
                                              uint64_t bdesc) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
        "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]),
        "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(adesc), "l"(bdesc)
      : "memory");
}

__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src,
                                          bool valid) {
  // src-size 0 fills the 16 bytes with zeros (the padding).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}

template <int kRows>
struct TileShape {
  static constexpr int kThreads = kRows * 128;  // one warpgroup per row
  static constexpr int kInH = kRows + 2;
  static constexpr int kInputBytes = kInH * kInW * kPixelBytes;
  static constexpr int kSmemBytes = kWeightBytes + 2 * kInputBytes;
};

struct Tiling {
  int tiles_w, tiles_h, total;
};

// Where a tile is: column and row tile of one item. A CTA walks its tiles
// by adding this form of gridDim.x (Advance) instead of dividing each
// tile's index by the runtime tile counts twice per tile, which took ~60
// instructions per warp and tile (integer division through MUFU.RCP).
struct TilePos {
  int tx, ty;
  int64_t item;
};

__device__ __forceinline__ TilePos Decompose(int tile, const Tiling& tl) {
  const int rest = tile / tl.tiles_w;
  return {tile % tl.tiles_w, rest % tl.tiles_h, rest / tl.tiles_h};
}

// pos + step, both Decompose forms (step.tx < tiles_w, step.ty < tiles_h,
// so one carry per digit).
__device__ __forceinline__ TilePos Advance(TilePos pos, const TilePos& step,
                                           const Tiling& tl) {
  pos.tx += step.tx;
  const bool carry_x = pos.tx >= tl.tiles_w;
  if (carry_x) pos.tx -= tl.tiles_w;
  pos.ty += step.ty + (carry_x ? 1 : 0);
  const bool carry_y = pos.ty >= tl.tiles_h;
  if (carry_y) pos.ty -= tl.tiles_h;
  pos.item += step.item + (carry_y ? 1 : 0);
  return pos;
}

// Byte offset of pixel q's 16-byte chunk f (channels 4f .. 4f + 3) in a
// staged tile (kARegisters): the pixel's two 16-channel halves at slots
// p ^ (q & 1), so that a quarter-warp's 128-bit A loads (2 consecutive
// pixels × 4 lanes) fall in distinct banks.
__device__ __forceinline__ int ChunkOffset(int q, int f) {
  return q * kPixelBytes + (((f >> 2) ^ (q & 1)) * 64) + (f & 3) * 16;
}

// Shared-memory address of pixel q's chunk f in the tile at `base`. From
// shared memory, wgmma's 128-byte swizzle: chunk f of the 128-byte row at
// address a sits at a + 16 · (f ^ ((a >> 7) & 7)), a function of the
// absolute address, so any 128-byte-aligned row may start a tap's A.
template <int kAMode>
__device__ __forceinline__ uint32_t ChunkPosition(uint32_t base, int q, int f) {
  if constexpr (kAMode == kARegisters) {
    return base + ChunkOffset(q, f);
  } else {
    const uint32_t row = base + q * kPixelBytes;
    return row + ((f ^ ((row >> 7) & 7)) << 4);
  }
}

// The chunks each thread stages, the same for every tile: chunk f = tid % 8
// of columns tid / 8, tid / 8 + kThreads / 8, ... of every input row, so
// that a row step is one fixed stride in global and in shared memory (kInW
// is even: a column's slot swizzle is the same in every row) and the index
// arithmetic stays out of the per-chunk work (ncu had the integer pipe as
// the busiest with a division per chunk).
template <int kRows>
struct ChunkWalk {
  static constexpr int kColsPerPass = TileShape<kRows>::kThreads / 8;
  static constexpr int kPasses = (kInW + kColsPerPass - 1) / kColsPerPass;
  static_assert(kInW % 2 == 0);
};

// Stages the input of the tile at `pos` (its rows plus a one-pixel halo,
// all 32 channels, zeros outside the image) into `buf` with cp.async, at
// ChunkOffset.
template <int kRows, int kAMode>
__device__ __forceinline__ void LoadTile(const float* __restrict__ x,
                                         float* buf, const TilePos& pos, int h,
                                         int w) {
  using S = TileShape<kRows>;
  using CW = ChunkWalk<kRows>;
  const int64_t item = pos.item;
  const int row0 = pos.ty * kRows, col0 = pos.tx * kSegment;
  const uint32_t base = SmemAddress(buf);
  const int f = threadIdx.x & 7;
  const int64_t row_stride = int64_t{w} * kC;
  // Global row row0 - 1 of the item, at channel 4f.
  const float* top = x + (item * h + row0 - 1) * row_stride + 4 * f;
#pragma unroll
  for (int pass = 0; pass < CW::kPasses; ++pass) {
    const int cx = (threadIdx.x >> 3) + pass * CW::kColsPerPass;
    if (cx >= kInW) break;
    const int gx = col0 - 1 + cx;
    const bool col_ok = gx >= 0 && gx < w;
    const float* src = top + int64_t{gx} * kC;
#pragma unroll
    for (int ry = 0; ry < S::kInH; ++ry) {
      const int gy = row0 - 1 + ry;
      const bool valid = col_ok && gy >= 0 && gy < h;
      CpAsync16(ChunkPosition<kAMode>(base, ry * kInW + cx, f), valid ? src : x,
                valid);
      src += row_stride;
    }
  }
}

// Rounds the chunks this thread staged (LoadTile's) to TF32 in place, once
// per tile: each staged value feeds up to 9 taps' A fragments.
template <int kRows, int kAMode>
__device__ __forceinline__ void RoundTileToTf32(float* buf) {
  using S = TileShape<kRows>;
  using CW = ChunkWalk<kRows>;
  unsigned char* bytes = reinterpret_cast<unsigned char*>(buf);
  const uint32_t base = SmemAddress(buf);
  const int f = threadIdx.x & 7;
#pragma unroll
  for (int pass = 0; pass < CW::kPasses; ++pass) {
    const int cx = (threadIdx.x >> 3) + pass * CW::kColsPerPass;
    if (cx >= kInW) break;
#pragma unroll
    for (int ry = 0; ry < S::kInH; ++ry) {
      unsigned char* c =
          bytes + (ChunkPosition<kAMode>(base, ry * kInW + cx, f) - base);
      const float4 v = *reinterpret_cast<const float4*>(c);
      *reinterpret_cast<uint4*>(c) =
          make_uint4(ToTf32(v.x), ToTf32(v.y), ToTf32(v.z), ToTf32(v.w));
    }
  }
  if constexpr (kAMode != kARegisters) {
    // wgmma (the async proxy) reads these bytes next.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
}

// The kARegisters main loop of one warpgroup over one tile: A fragments of
// one tap (its four k-steps of 8 channels) double-buffered in registers, the
// next tap's loads running while this tap's four wgmmas do.
template <bool kOverlap>
__device__ __forceinline__ void MainLoopRegisters(float (&d)[16],
                                                  const float* buf,
                                                  uint64_t b_desc0, int wg,
                                                  int wwarp, int g, int t) {
  uint32_t a[2][kKStepsPerTap][4];
  const int q_base = wg * kInW + 16 * wwarp + g;
  const unsigned char* tile_bytes = reinterpret_cast<const unsigned char*>(buf);
  auto load_tap = [&](int tap, uint32_t(&dst)[kKStepsPerTap][4]) {
    const int dy = tap / 3, dx = tap % 3;
    const int q0 = q_base + dy * kInW + dx;  // the other row: q0 + 8
#pragma unroll
    for (int pair = 0; pair < kKStepsPerTap / 2; ++pair) {
      // Chunk 4·pair + t: channels 16·pair + 4t .. + 3 (InputChannel).
      const uint4 lo = *reinterpret_cast<const uint4*>(
          tile_bytes + ChunkOffset(q0, 4 * pair + t));
      const uint4 hi = *reinterpret_cast<const uint4*>(
          tile_bytes + ChunkOffset(q0 + 8, 4 * pair + t));
      dst[2 * pair][0] = lo.x;
      dst[2 * pair][1] = hi.x;
      dst[2 * pair][2] = lo.y;
      dst[2 * pair][3] = hi.y;
      dst[2 * pair + 1][0] = lo.z;
      dst[2 * pair + 1][1] = hi.z;
      dst[2 * pair + 1][2] = lo.w;
      dst[2 * pair + 1][3] = hi.w;
    }
  };
  load_tap(0, a[0]);
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) {
    uint32_t(&cur)[kKStepsPerTap][4] = a[tap & 1];
    uint32_t(&other)[kKStepsPerTap][4] = a[(tap + 1) & 1];
#pragma unroll
    for (int i = 0; i < 16; ++i) FenceOperand(d[i]);
#pragma unroll
    for (int s = 0; s < kKStepsPerTap; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) FenceOperand(cur[s][i]);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < kKStepsPerTap; ++s) {
      WgmmaTf32(d, cur[s], BDescriptorAt(b_desc0, tap * kKStepsPerTap + s));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    if constexpr (kOverlap) {
      // This tap's group stays in flight; the previous tap's, which read
      // `other`, must be done before `other` is refilled.
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
#pragma unroll
      for (int s = 0; s < kKStepsPerTap; ++s)
#pragma unroll
        for (int i = 0; i < 4; ++i) FenceOperand(other[s][i]);
      if (tap + 1 < kTaps) load_tap(tap + 1, other);
    } else {
      if (tap + 1 < kTaps) load_tap(tap + 1, other);
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
      for (int s = 0; s < kKStepsPerTap; ++s)
#pragma unroll
        for (int i = 0; i < 4; ++i) FenceOperand(cur[s][i]);
#pragma unroll
      for (int i = 0; i < 16; ++i) FenceOperand(d[i]);
    }
  }
  if constexpr (kOverlap) {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
    for (int b = 0; b < 2; ++b)
#pragma unroll
      for (int s = 0; s < kKStepsPerTap; ++s)
#pragma unroll
        for (int i = 0; i < 4; ++i) FenceOperand(a[b][s][i]);
#pragma unroll
    for (int i = 0; i < 16; ++i) FenceOperand(d[i]);
  }
}

// Persistent CTAs, one warpgroup per output row of a tile (kRows rows × 64
// columns × 32 channels of one item). The filters sit in shared memory for
// the kernel's life; the input tiles are double-buffered, the next one's
// cp.async in flight while this one's 36 wgmmas run. Each warp loads its
// A fragments (16 pixels × 8 channels per k-step) from the tile (rounded
// to TF32 in place when it landed) and issues the warpgroup's m64n32k8
// wgmma, four per tap: with kOverlap a tap's group stays in flight while
// the next tap's fragments load and issue (wait depth 1), else each tap
// waits for its own (depth 0). With A from shared memory (kAMode other than
// kARegisters) the warpgroup issues all 36 wgmmas on descriptors and waits
// once per tile.
template <int kRows, bool kOverlap, int kAMode>
__global__ void __launch_bounds__(kRows * 128, kRows == 2 ? 2 : 1)
    Conv3x3C32Kernel(const float* __restrict__ x,
                     const float4* __restrict__ wpacked,
                     const float* __restrict__ bias,
                     const float* __restrict__ residual, float* __restrict__ y,
                     int h, int w, Tiling tl, bool relu) {
  using S = TileShape<kRows>;
  extern __shared__ __align__(128) unsigned char smem[];
  float4* s_w = reinterpret_cast<float4*>(smem);
  float* s_in0 = reinterpret_cast<float*>(smem + kWeightBytes);
  float* s_in1 = reinterpret_cast<float*>(smem + kWeightBytes + S::kInputBytes);

  int tile = blockIdx.x;
  const TilePos step = Decompose(gridDim.x, tl);
  TilePos pos = Decompose(tile, tl);
  if (tile < tl.total) LoadTile<kRows, kAMode>(x, s_in0, pos, h, w);
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  for (int i = threadIdx.x; i < kWeightBytes / 16; i += S::kThreads) {
    s_w[i] = __ldg(wpacked + i);
  }
  // The filters are read by wgmma (the async proxy) after ordinary stores.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wg = warp >> 2, wwarp = warp & 3;
  const int g = lane >> 2, t = lane & 3;
  float bv[8];
  {
    const float4 b0 = __ldg(reinterpret_cast<const float4*>(bias) + 2 * t);
    const float4 b1 = __ldg(reinterpret_cast<const float4*>(bias) + 2 * t + 1);
    bv[0] = b0.x, bv[1] = b0.y, bv[2] = b0.z, bv[3] = b0.w;
    bv[4] = b1.x, bv[5] = b1.y, bv[6] = b1.z, bv[7] = b1.w;
  }
  const uint64_t b_desc0 = BDescriptor(SmemAddress(s_w));

  for (int it = 0; tile < tl.total; ++it, tile += gridDim.x) {
    float* buf = (it & 1) ? s_in1 : s_in0;
    const int next = tile + gridDim.x;
    const TilePos next_pos = Advance(pos, step, tl);
    if (next < tl.total) {
      LoadTile<kRows, kAMode>(x, (it & 1) ? s_in0 : s_in1, next_pos, h, w);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    RoundTileToTf32<kRows, kAMode>(buf);
    __syncthreads();  // the tile's copies of every thread (and the filters)

    const int64_t item = pos.item;
    const int orow = pos.ty * kRows + wg;
    const int col = pos.tx * kSegment + 16 * wwarp + g;  // and col + 8
    const bool row_ok = orow < h;
    const int64_t out0 = ((item * h + orow) * w + col) * kC + 8 * t;
    const int64_t out1 = out0 + 8 * kC;
    // The residual of this lane's two pixels, loaded before the main loop
    // so that its latency hides behind it.
    float4 r[4] = {};
    if (residual != nullptr && row_ok) {
      if (col < w) {
        r[0] = __ldg(reinterpret_cast<const float4*>(residual + out0));
        r[1] = __ldg(reinterpret_cast<const float4*>(residual + out0) + 1);
      }
      if (col + 8 < w) {
        r[2] = __ldg(reinterpret_cast<const float4*>(residual + out1));
        r[3] = __ldg(reinterpret_cast<const float4*>(residual + out1) + 1);
      }
    }

    float d[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) d[i] = 0.0f;
    if constexpr (kAMode == kARegisters) {
      MainLoopRegisters<kOverlap>(d, buf, b_desc0, wg, wwarp, g, t);
    } else {
      // All 36 k-steps from shared memory: the warpgroup's 64 rows of tap
      // (dy, dx) start at pixel (wg + dy) · kInW + dx of the tile.
      const uint32_t a_base = SmemAddress(buf);
#pragma unroll
      for (int i = 0; i < 16; ++i) FenceOperand(d[i]);
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int tap = 0; tap < kTaps; ++tap) {
        const int dy = tap / 3, dx = tap % 3;
        const uint32_t row = a_base + ((wg + dy) * kInW + dx) * kPixelBytes;
#pragma unroll
        for (int s = 0; s < kKStepsPerTap; ++s) {
          WgmmaTf32Smem(d, ADescriptor(row + 32 * s),
                        BDescriptorAt(b_desc0, tap * kKStepsPerTap + s));
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
      for (int i = 0; i < 16; ++i) FenceOperand(d[i]);
    }

    // Epilogue: lane (g, t) holds channels 8t .. 8t + 7 of pixels col and
    // col + 8 (rows g and g + 8 of the warp's 16), i.e. one 32-byte sector
    // of each pixel's output. Stored as they are, each 128-bit store would
    // fill half of a sector per lane (ncu, 2026-12-04: global stores at 16
    // of 32 bytes per sector, a quarter of the kernel's sectors excess), so
    // lanes t and t ^ 1 swap half their channels first: then each store
    // instruction writes whole sectors (lane 2u the lower 16 bytes, lane
    // 2u + 1 the upper 16 of the same sector: channels 16u .. 16u + 7 in the
    // first store, 16u + 8 .. 16u + 15 in the second).
    if (row_ok) {
      const bool odd = (t & 1) != 0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float o[8];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          o[2 * i] = d[4 * i + 2 * half] + bv[2 * i];
          o[2 * i + 1] = d[4 * i + 2 * half + 1] + bv[2 * i + 1];
        }
        const float4 r0 = r[2 * half], r1 = r[2 * half + 1];
        o[0] += r0.x, o[1] += r0.y, o[2] += r0.z, o[3] += r0.w;
        o[4] += r1.x, o[5] += r1.y, o[6] += r1.z, o[7] += r1.w;
        if (relu) {
#pragma unroll
          for (int k = 0; k < 8; ++k) o[k] = fmaxf(o[k], 0.0f);
        }
        // Even lanes keep channels 8t .. 8t + 3 and send 8t + 4 .. 8t + 7;
        // odd lanes keep 8t + 4 .. 8t + 7 and send 8t .. 8t + 3. The pair
        // shares g, so both lanes are here or neither (warp-uniform
        // row_ok; the column test comes after the shuffles).
        float keep[4], got[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          keep[i] = odd ? o[4 + i] : o[i];
          got[i] = __shfl_xor_sync(0xffffffffu, odd ? o[i] : o[4 + i], 1);
        }
        if (col + 8 * half >= w) continue;
        // Even lane: its own 8t .. 8t + 3, then the partner's 8t + 8 ..
        // 8t + 11; odd lane: the partner's 8t - 4 .. 8t - 1, then its own
        // 8t + 4 .. 8t + 7.
        float* out = y + (half ? out1 : out0) - (odd ? 4 : 0);
        const float4 first =
            odd ? make_float4(got[0], got[1], got[2], got[3])
                : make_float4(keep[0], keep[1], keep[2], keep[3]);
        const float4 second =
            odd ? make_float4(keep[0], keep[1], keep[2], keep[3])
                : make_float4(got[0], got[1], got[2], got[3]);
        reinterpret_cast<float4*>(out)[0] = first;
        reinterpret_cast<float4*>(out + 8)[0] = second;
      }
    }
    __syncthreads();  // every warp is done with `buf` before it is refilled
    pos = next_pos;
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// Per kernel variant and device: the shared-memory opt-in
// (cudaFuncSetAttribute applies to the current device only,
// shared_memory_opt_in.h) and the resident CTAs per SM for the persistent
// grid, found once.
template <int kRows, bool kOverlap, int kAMode>
absl::StatusOr<int> GridFor(int device) {
  using S = TileShape<kRows>;
  static std::mutex mu;
  static int ctas[64] = {};
  if (device < 0 || device >= 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchConv3x3C32Tf32: device ", device));
  }
  std::lock_guard<std::mutex> lock(mu);
  if (ctas[device] == 0) {
    auto* kernel = &Conv3x3C32Kernel<kRows, kOverlap, kAMode>;
    cudaError_t err = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes);
    int per_sm = 0, sms = 0;
    if (err == cudaSuccess) {
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, kernel, S::kThreads, S::kSmemBytes);
    }
    if (err == cudaSuccess) {
      err =
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    }
    if (err != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("Conv3x3C32Kernel set-up: ", cudaGetErrorString(err)));
    }
    if (per_sm < 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Conv3x3C32Kernel: no CTA of ", S::kSmemBytes,
          " bytes of shared memory fits on an SM of device ", device));
    }
    ctas[device] = per_sm * sms;
  }
  return ctas[device];
}

template <int kRows, bool kOverlap, int kAMode>
absl::Status Launch(const Conv3x3C32Params& p, cudaStream_t stream) {
  using S = TileShape<kRows>;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("LaunchConv3x3C32Tf32: ", cudaGetErrorString(err)));
  }
  const absl::StatusOr<int> resident = GridFor<kRows, kOverlap, kAMode>(device);
  if (!resident.ok()) return resident.status();
  Tiling tl;
  tl.tiles_w = (p.w + kSegment - 1) / kSegment;
  tl.tiles_h = (p.h + kRows - 1) / kRows;
  const int64_t total = int64_t{tl.tiles_w} * tl.tiles_h * p.n;
  if (total > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchConv3x3C32Tf32: ", total, " tiles (n ", p.n, ", h ",
                     p.h, ", w ", p.w, ") exceed one grid"));
  }
  tl.total = static_cast<int>(total);
  const int grid = std::min(tl.total, *resident);
  Conv3x3C32Kernel<kRows, kOverlap, kAMode>
      <<<grid, S::kThreads, S::kSmemBytes, stream>>>(
          p.x, reinterpret_cast<const float4*>(p.packed_weights), p.bias,
          p.residual, p.y, p.h, p.w, tl, p.relu);
  err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("Conv3x3C32Kernel launch: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

bool Aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Whether [a, a + bytes) and [b, b + bytes) overlap.
bool Overlap(const float* a, const float* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto z = reinterpret_cast<uintptr_t>(b);
  return x < z + bytes && z < x + bytes;
}

}  // namespace

std::string Conv3x3C32TileName(Conv3x3C32Tile tile) {
  switch (tile) {
    case Conv3x3C32Tile::kRows2:
      return "wgmma_rows2";
    case Conv3x3C32Tile::kRows4:
      return "wgmma_rows4";
    case Conv3x3C32Tile::kRows2Serial:
      return "wgmma_rows2_serial";
    case Conv3x3C32Tile::kRows2SharedA:
      return "wgmma_rows2_smem_a";
  }
  return "unknown";
}

absl::StatusOr<Conv3x3C32Tile> Conv3x3C32TileFromName(std::string_view name) {
  std::string names;
  for (const Conv3x3C32Tile t : kConv3x3C32Tiles) {
    if (Conv3x3C32TileName(t) == name) return t;
    absl::StrAppend(&names, names.empty() ? "" : ", ", Conv3x3C32TileName(t));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("conv3x3_c32: no tile form named '", std::string(name),
                   "' (one of ", names, ")"));
}

float RoundToTf32(float v) {
  // cvt.rna.tf32.f32: round the 32-bit pattern to its top 19 bits, ties
  // away from zero (add half an ulp of TF32 to the magnitude, truncate).
  // Infinities and NaN pass unchanged (not used by the tests).
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {
    u = (u + 0x1000u) & 0xffffe000u;
  }
  std::memcpy(&v, &u, 4);
  return v;
}

bool Conv3x3C32ReadsASharedMemory(Conv3x3C32Tile tile) {
  return tile == Conv3x3C32Tile::kRows2SharedA;
}

absl::StatusOr<std::vector<float>> PackConv3x3C32Weights(
    std::span<const float> oihw, Conv3x3C32Tile tile) {
  if (oihw.size() != static_cast<size_t>(kC * kC * kTaps)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PackConv3x3C32Weights: ", oihw.size(),
                     " floats; expected 32 x 32 x 3 x 3 = ", kC * kC * kTaps));
  }
  std::vector<float> out(kConv3x3C32PackedFloats);
  for (int tap = 0; tap < kTaps; ++tap) {
    for (int s = 0; s < kKStepsPerTap; ++s) {
      const int ks = tap * kKStepsPerTap + s;
      for (int n = 0; n < kC; ++n) {
        const int co = PhysicalChannel(n);
        for (int k = 0; k < 8; ++k) {
          const int ci =
              InputChannel(s, k, !Conv3x3C32ReadsASharedMemory(tile));
          out[(ks * kKStepBytes + BOffset(n, k)) / 4] =
              RoundToTf32(oihw[(co * kC + ci) * kTaps + tap]);
        }
      }
    }
  }
  return out;
}

absl::Status LaunchConv3x3C32Tf32(const Conv3x3C32Params& p,
                                  cudaStream_t stream) {
  if (p.x == nullptr || p.packed_weights == nullptr || p.bias == nullptr ||
      p.y == nullptr || p.n <= 0 || p.h <= 0 || p.w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchConv3x3C32Tf32: null pointer or size n ", p.n,
                     " h ", p.h, " w ", p.w));
  }
  if (!Aligned16(p.x) || !Aligned16(p.packed_weights) || !Aligned16(p.bias) ||
      !Aligned16(p.y) || (p.residual != nullptr && !Aligned16(p.residual))) {
    return absl::InvalidArgumentError(
        "LaunchConv3x3C32Tf32: every tensor must be 16-byte aligned");
  }
  const size_t bytes = sizeof(float) * size_t(p.n) * p.h * p.w * kC;
  if (Overlap(p.x, p.y, bytes) ||
      (p.residual != nullptr && Overlap(p.residual, p.y, bytes))) {
    return absl::InvalidArgumentError(
        "LaunchConv3x3C32Tf32: y overlaps x or the residual (the CTAs read "
        "halos other CTAs would already have overwritten)");
  }
  switch (p.tile) {
    case Conv3x3C32Tile::kRows2:
      return Launch<2, true, kARegisters>(p, stream);
    case Conv3x3C32Tile::kRows4:
      return Launch<4, true, kARegisters>(p, stream);
    case Conv3x3C32Tile::kRows2Serial:
      return Launch<2, false, kARegisters>(p, stream);
    case Conv3x3C32Tile::kRows2SharedA:
      return Launch<2, true, kAShared>(p, stream);
  }
  return absl::InvalidArgumentError("LaunchConv3x3C32Tf32: unknown tile");
}

absl::Status Conv3x3C32Supported(int device) {
  int major = 0, minor = 0;
  cudaError_t err =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                 device);
  }
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("Conv3x3C32Supported: ", cudaGetErrorString(err)));
  }
  if (major != 9 || minor != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the layer1 kernel (wgmma) is built for sm_90a only; device ", device,
        " is sm_", major, minor));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
