// The embedding ResNet's 32-channel 3×3 convolutions (layer1: six of them,
// stride 1, padding 1, 32 channels in and out) on TF32 tensor cores, NHWC,
// with the folded BatchNorm's shift as bias, an optional residual and ReLU
// in the epilogue.
//
// Why a kernel of our own: cuDNN's engines run these six layers at 19-25 %
// of the H200's TF32 peak (docs/benchmarks.md, per-layer table) although
// they are the trunk's largest tensors (327 MB per layer at 32 windows):
// with only 32 output channels its engines' tiles are mostly empty, and a
// first kernel of ours on mma.sync (the pre-Hopper tensor-core instruction)
// was no faster than cuDNN (0.38 / 0.43 ms against 0.39 / 0.51 ms per
// layer at 32 windows, 2026-12-04): mma.sync reaches about half of Hopper's
// TF32 rate. This one runs Hopper's wgmma (m64n32k8, TF32): persistent CTAs
// keep the filter bank in shared memory (as wgmma's K-major B operand) and
// double-buffer the input tiles (cp.async, the next tile in flight while
// this one computes); each warpgroup computes 64 output pixels × 32
// channels of one row, its A fragments (pixels × channels of one tap) read
// from the staged tile into registers (128-bit loads; the tile is rounded
// to TF32 in place once, as each staged value feeds up to 9 taps).
//
// Arithmetic: products of TF32-rounded inputs and weights (round to nearest,
// ties away: cvt.rna, as the weights are rounded at packing), FP32
// accumulation in tap order, then + bias (+ residual), then max(0, ·) when
// `relu`. The same precision class as cuDNN's TF32 path (DESIGN.md: TF32
// ≤ 1e-3 relative to FP32). Built for sm_90a only (Conv3x3C32Supported).
#ifndef DIARIZATION_KERNELS_CONV3X3_C32_H_
#define DIARIZATION_KERNELS_CONV3X3_C32_H_

#include <cuda_runtime_api.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::kernels {

inline constexpr int kConv3x3C32Channels = 32;
// Floats of the packed filter bank (PackConv3x3C32Weights).
inline constexpr int kConv3x3C32PackedFloats = 9 * 32 * 32;

// Output rows per CTA (one warpgroup each, 64 columns per row) and the
// wgmma schedule. kDefault is production's; the others exist for the
// benchmark (bench/gpu/conv3x3_c32_bench) that chose it.
enum class Conv3x3C32Tile {
  kRows2 = 0,  // 2 warpgroups, 102 KiB of shared memory: 2 CTAs per SM
  kRows4 = 1,  // 4 warpgroups, 135 KiB: 1 CTA per SM
  // As kRows2, but each tap's wgmmas finish before the next tap's fragments
  // load (the other two keep one tap in flight).
  kRows2Serial = 2,
  // As kRows2, but wgmma reads A from shared memory too (the tile staged in
  // its 128-byte swizzled layout, a descriptor per k-step, no fragment
  // loads). Made to test whether instruction issue bounds kRows2 (ADR
  // 0084): it was no faster (0.365 / 0.377 ms against 0.351 / 0.378 ms,
  // 2026-12-04), so issue is not the bound.
  kRows2SharedA = 3,
};
inline constexpr Conv3x3C32Tile kConv3x3C32DefaultTile = Conv3x3C32Tile::kRows2;
// Every form, in enum order: the one list the name parser, the test and the
// benchmark walk.
inline constexpr Conv3x3C32Tile kConv3x3C32Tiles[] = {
    Conv3x3C32Tile::kRows2, Conv3x3C32Tile::kRows4,
    Conv3x3C32Tile::kRows2Serial, Conv3x3C32Tile::kRows2SharedA};
std::string Conv3x3C32TileName(Conv3x3C32Tile tile);
// The tile named `name` (Conv3x3C32TileName); InvalidArgument listing the
// names otherwise.
absl::StatusOr<Conv3x3C32Tile> Conv3x3C32TileFromName(std::string_view name);

// Whether `tile` reads wgmma's A operand from shared memory (its filters
// are packed in another channel order).
bool Conv3x3C32ReadsASharedMemory(Conv3x3C32Tile tile);

// The filter bank in the kernel's order for `tile`: `oihw` is PyTorch's
// (32, 32, 3, 3) weight (any BatchNorm folded in). Returns
// kConv3x3C32PackedFloats floats, each rounded to TF32 (cvt.rna), in the
// byte layout the kernel copies to shared memory for wgmma's B operand;
// InvalidArgument for another size. Launch with the same tile.
absl::StatusOr<std::vector<float>> PackConv3x3C32Weights(
    std::span<const float> oihw, Conv3x3C32Tile tile = kConv3x3C32DefaultTile);

struct Conv3x3C32Params {
  const float* x = nullptr;  // (n, h, w, 32)
  // PackConv3x3C32Weights(·, tile), on the device.
  const float* packed_weights = nullptr;
  const float* bias = nullptr;      // (32)
  const float* residual = nullptr;  // (n, h, w, 32) or null
  float* y = nullptr;  // (n, h, w, 32); must not alias x or residual
  int n = 0, h = 0, w = 0;
  bool relu = true;
  Conv3x3C32Tile tile = kConv3x3C32DefaultTile;
};

// y[b,i,j,k] = act(bias[k] + Σ_{dy,dx,c} W[k,c,dy,dx] · x[b,i+dy−1,j+dx−1,c]
// (+ residual[b,i,j,k])), x = 0 outside, act = ReLU or identity, products in
// TF32. InvalidArgument for null pointers, non-positive sizes, a grid too
// large, 16-byte-misaligned tensors or y aliasing an input.
absl::Status LaunchConv3x3C32Tf32(const Conv3x3C32Params& p,
                                  cudaStream_t stream);

// OK where the kernel runs: a GPU of compute capability 9.0 (the binary
// holds sm_90a code only); FailedPrecondition with the reason otherwise.
absl::Status Conv3x3C32Supported(int device);

// Host model of the kernel's rounding: the float `v` rounded to TF32 as
// cvt.rna.tf32.f32 does (for the tests' TF32-exact reference).
float RoundToTf32(float v);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_CONV3X3_C32_H_
