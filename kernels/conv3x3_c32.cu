#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/conv3x3_c32.h"

namespace diarization::kernels {
namespace {

constexpr int kC = kConv3x3C32Channels;
constexpr int kTaps = 9;
constexpr int kKSteps = kC / 8;  // mma k-steps per tap (8 channels each)
// Packed filters: per (tap, k-step, pair of n-tiles) one float4 per lane.
constexpr int kPackedFloat4 = kTaps * kKSteps * 2 * 32;
static_assert(kPackedFloat4 * 4 == kConv3x3C32PackedFloats);

// Output channel of the mma's logical column n (n-tile nt = n / 8, column
// c = n % 8). Chosen so that lane (g, t)'s accumulators of the four n-tiles
// (columns 2t, 2t + 1 of each) are channels 8t .. 8t + 7: the epilogue
// stores each output pixel's 8 channels as two float4.
__host__ __device__ constexpr int PhysicalChannel(int n) {
  const int nt = n / 8, c = n % 8;
  return 8 * (c >> 1) + 2 * nt + (c & 1);
}

__device__ __forceinline__ uint32_t ToTf32(float v) {
  uint32_t u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
  return u;
}

__device__ __forceinline__ void MmaTf32(float (&c)[4], const uint32_t (&a)[4],
                                        uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int kWarps, int kCols, bool kSmemWeights>
struct TileShape {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kInH = kWarps + 2;  // one output row per warp + halo
  static constexpr int kInW = kCols + 2;
  static constexpr int kMTiles = kCols / 16;
  static constexpr int kInputBytes = kInH * kInW * kC * 4;
  static constexpr int kWeightBytes = kSmemWeights ? kPackedFloat4 * 16 : 0;
  static constexpr int kSmemBytes = kWeightBytes + kInputBytes;
  static_assert(kCols % 16 == 0);
};

// One CTA: output rows [row0, row0 + kWarps) × columns [col0, col0 + kCols)
// of one item, all 32 channels. Shared memory: the packed filters (when
// kSmemWeights), then the input tile, pixel by pixel (32 floats each), its
// four 8-channel chunks XOR-swizzled by the pixel's index (chunk c of pixel
// q at slot c ^ (q & 3)), so that the A fragments of 4 consecutive pixels
// (a half-warp's 64-bit loads) fall in distinct banks.
template <int kWarps, int kCols, bool kSmemWeights>
__global__ void __launch_bounds__(kWarps * 32)
    Conv3x3C32Kernel(const float* __restrict__ x,
                     const float4* __restrict__ wpacked,
                     const float* __restrict__ bias,
                     const float* __restrict__ residual, float* __restrict__ y,
                     int h, int w, bool relu) {
  using S = TileShape<kWarps, kCols, kSmemWeights>;
  extern __shared__ float4 smem[];
  float4* s_w = smem;
  float* s_x = reinterpret_cast<float*>(smem + S::kWeightBytes / 16);
  const int tid = threadIdx.x;
  const int64_t item = blockIdx.z;
  const int row0 = blockIdx.y * kWarps;
  const int col0 = blockIdx.x * kCols;

  if constexpr (kSmemWeights) {
    for (int i = tid; i < kPackedFloat4; i += S::kThreads) {
      s_w[i] = __ldg(wpacked + i);
    }
  }
  const float* xi = x + item * h * w * kC;
  for (int i = tid; i < S::kInH * S::kInW * (kC / 4); i += S::kThreads) {
    const int q = i >> 3;  // tile pixel
    const int f = i & 7;   // float4 within the pixel
    const int ry = q / S::kInW;
    const int cx = q - ry * S::kInW;
    const int gy = row0 - 1 + ry, gx = col0 - 1 + cx;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (gy >= 0 && gy < h && gx >= 0 && gx < w) {
      v = __ldg(reinterpret_cast<const float4*>(
                    xi + (int64_t{gy} * w + gx) * kC) +
                f);
    }
    uint4 u;
    u.x = ToTf32(v.x);
    u.y = ToTf32(v.y);
    u.z = ToTf32(v.z);
    u.w = ToTf32(v.w);
    const int slot = (f >> 1) ^ (q & 3);
    reinterpret_cast<uint4*>(s_x + q * kC + slot * 8)[f & 1] = u;
  }
  __syncthreads();

  const int warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  float acc[S::kMTiles][4][4];
#pragma unroll
  for (int mt = 0; mt < S::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

#pragma unroll
  for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
    for (int dx = 0; dx < 3; ++dx) {
      const int tap = dy * 3 + dx;
      const int qrow = (warp + dy) * S::kInW + dx + g;
#pragma unroll
      for (int s = 0; s < kKSteps; ++s) {
        uint32_t b[4][2];
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          const int idx = ((tap * kKSteps + s) * 2 + np) * 32 + lane;
          const float4 bv = kSmemWeights ? s_w[idx] : __ldg(wpacked + idx);
          b[2 * np][0] = __float_as_uint(bv.x);
          b[2 * np][1] = __float_as_uint(bv.y);
          b[2 * np + 1][0] = __float_as_uint(bv.z);
          b[2 * np + 1][1] = __float_as_uint(bv.w);
        }
#pragma unroll
        for (int mt = 0; mt < S::kMTiles; ++mt) {
          const int q0 = qrow + mt * 16, q1 = q0 + 8;
          const float2 lo = *reinterpret_cast<const float2*>(
              s_x + q0 * kC + ((s ^ (q0 & 3)) * 8) + 2 * t);
          const float2 hi = *reinterpret_cast<const float2*>(
              s_x + q1 * kC + ((s ^ (q1 & 3)) * 8) + 2 * t);
          // Logical k = t ↔ channel 8s + 2t, k = t + 4 ↔ 8s + 2t + 1 (the
          // packed filters use the same order).
          const uint32_t a[4] = {__float_as_uint(lo.x), __float_as_uint(hi.x),
                                 __float_as_uint(lo.y), __float_as_uint(hi.y)};
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            MmaTf32(acc[mt][nt], a, b[nt][0], b[nt][1]);
          }
        }
      }
    }
  }

  // Epilogue: lane (g, t) holds channels 8t .. 8t + 7 of pixels g and g + 8
  // of each m-tile.
  const int orow = row0 + warp;
  if (orow >= h) return;
  float bv[8];
  {
    const float4 b0 = __ldg(reinterpret_cast<const float4*>(bias) + 2 * t);
    const float4 b1 = __ldg(reinterpret_cast<const float4*>(bias) + 2 * t + 1);
    bv[0] = b0.x, bv[1] = b0.y, bv[2] = b0.z, bv[3] = b0.w;
    bv[4] = b1.x, bv[5] = b1.y, bv[6] = b1.z, bv[7] = b1.w;
  }
#pragma unroll
  for (int mt = 0; mt < S::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int ocol = col0 + mt * 16 + g + 8 * half;
      if (ocol >= w) continue;
      float o[8];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        o[2 * nt] = acc[mt][nt][2 * half] + bv[2 * nt];
        o[2 * nt + 1] = acc[mt][nt][2 * half + 1] + bv[2 * nt + 1];
      }
      const int64_t off = ((item * h + orow) * w + ocol) * kC + 8 * t;
      if (residual != nullptr) {
        const float4 r0 = __ldg(reinterpret_cast<const float4*>(residual + off));
        const float4 r1 =
            __ldg(reinterpret_cast<const float4*>(residual + off) + 1);
        o[0] += r0.x, o[1] += r0.y, o[2] += r0.z, o[3] += r0.w;
        o[4] += r1.x, o[5] += r1.y, o[6] += r1.z, o[7] += r1.w;
      }
      if (relu) {
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = fmaxf(o[k], 0.0f);
      }
      float4* out = reinterpret_cast<float4*>(y + off);
      out[0] = make_float4(o[0], o[1], o[2], o[3]);
      out[1] = make_float4(o[4], o[5], o[6], o[7]);
    }
  }
}

// cudaFuncSetAttribute per (kernel, device), once: it applies to the
// current device only (shared_memory_opt_in.h says why it matters), and
// the variants share one function type, so each keeps its own record.
template <int kWarps, int kCols, bool kSmemWeights>
absl::Status Launch(const Conv3x3C32Params& p, cudaStream_t stream) {
  using S = TileShape<kWarps, kCols, kSmemWeights>;
  auto* kernel = &Conv3x3C32Kernel<kWarps, kCols, kSmemWeights>;
  if (S::kSmemBytes > 48 * 1024) {
    static std::mutex mu;
    static std::set<int> done;
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) {
      std::lock_guard<std::mutex> lock(mu);
      if (!done.count(device)) {
        err = cudaFuncSetAttribute(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
            S::kSmemBytes);
        if (err == cudaSuccess) done.insert(device);
      }
    }
    if (err != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("Conv3x3C32Kernel: cudaFuncSetAttribute: ",
                       cudaGetErrorString(err)));
    }
  }
  const dim3 grid((p.w + kCols - 1) / kCols, (p.h + kWarps - 1) / kWarps,
                  p.n);
  if (grid.y > 65535u || grid.z > 65535u) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchConv3x3C32Tf32: grid ", grid.x, " x ", grid.y,
                     " x ", grid.z, " is too large (n ", p.n, ", h ", p.h,
                     ")"));
  }
  kernel<<<grid, S::kThreads, S::kSmemBytes, stream>>>(
      p.x, reinterpret_cast<const float4*>(p.packed_weights), p.bias,
      p.residual, p.y, p.h, p.w, p.relu);
  const cudaError_t err = cudaGetLastError();
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
    case Conv3x3C32Tile::kRows8Cols32:
      return "rows8_cols32";
    case Conv3x3C32Tile::kRows4Cols64:
      return "rows4_cols64";
    case Conv3x3C32Tile::kRows4Cols32Global:
      return "rows4_cols32_l1";
    case Conv3x3C32Tile::kRows8Cols32Global:
      return "rows8_cols32_l1";
    case Conv3x3C32Tile::kRows2Cols64Global:
      return "rows2_cols64_l1";
  }
  return "unknown";
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

absl::StatusOr<std::vector<float>> PackConv3x3C32Weights(
    std::span<const float> oihw) {
  if (oihw.size() != static_cast<size_t>(kC * kC * kTaps)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PackConv3x3C32Weights: ", oihw.size(),
                     " floats; expected 32 x 32 x 3 x 3 = ", kC * kC * kTaps));
  }
  std::vector<float> out(kConv3x3C32PackedFloats);
  for (int tap = 0; tap < kTaps; ++tap) {
    for (int s = 0; s < kKSteps; ++s) {
      for (int np = 0; np < 2; ++np) {
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          float* dst = &out[(((tap * kKSteps + s) * 2 + np) * 32 + lane) * 4];
          for (int j = 0; j < 2; ++j) {  // n-tile 2·np + j
            const int co = PhysicalChannel(8 * (2 * np + j) + g);
            for (int e = 0; e < 2; ++e) {  // b0: channel 8s+2t, b1: +1
              const int ci = 8 * s + 2 * t + e;
              dst[2 * j + e] = RoundToTf32(oihw[(co * kC + ci) * kTaps + tap]);
            }
          }
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
    case Conv3x3C32Tile::kRows8Cols32:
      return Launch<8, 32, true>(p, stream);
    case Conv3x3C32Tile::kRows4Cols64:
      return Launch<4, 64, true>(p, stream);
    case Conv3x3C32Tile::kRows4Cols32Global:
      return Launch<4, 32, false>(p, stream);
    case Conv3x3C32Tile::kRows8Cols32Global:
      return Launch<8, 32, false>(p, stream);
    case Conv3x3C32Tile::kRows2Cols64Global:
      return Launch<2, 64, false>(p, stream);
  }
  return absl::InvalidArgumentError("LaunchConv3x3C32Tf32: unknown tile");
}

}  // namespace diarization::kernels
