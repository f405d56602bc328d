// The embedding ResNet's 32-channel 3×3 convolutions (layer1: six of them,
// stride 1, padding 1, 32 channels in and out) on TF32 tensor cores, NHWC,
// with the folded BatchNorm's shift as bias, an optional residual and ReLU
// in the epilogue.
//
// Why a kernel of our own: cuDNN's engines run these six layers at 19-25 %
// of the H200's TF32 peak (docs/benchmarks.md, per-layer table) although
// they are the trunk's largest tensors (327 MB per layer at 32 windows):
// with only 32 output channels a GEMM tile of its engines is mostly empty,
// and the layers are bound by moving their activations. Here a CTA stages
// one input tile (its output rows plus a one-pixel halo, all 32 channels,
// rounded to TF32 once on the way into shared memory) and the whole filter
// bank, and each warp runs one output row segment as an implicit GEMM
// (M = pixels, N = 32 channels, K = 9 taps × 32 channels) on
// mma.sync.m16n8k8 TF32, accumulating in FP32.
//
// Arithmetic: products of TF32-rounded inputs and weights (round to nearest,
// ties away: cvt.rna, as the weights are rounded at packing), FP32
// accumulation in tap order, then + bias (+ residual), then max(0, ·) when
// `relu`. The same precision class as cuDNN's TF32 path (DESIGN.md: TF32
// ≤ 1e-3 relative to FP32).
#ifndef DIARIZATION_KERNELS_CONV3X3_C32_H_
#define DIARIZATION_KERNELS_CONV3X3_C32_H_

#include <cuda_runtime_api.h>

#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::kernels {

inline constexpr int kConv3x3C32Channels = 32;
// Floats of the packed filter bank (PackConv3x3C32Weights).
inline constexpr int kConv3x3C32PackedFloats = 9 * 32 * 32;

// Tile shapes: output rows per CTA (one warp per row) × output columns per
// warp. kDefault is production's; the others exist for the benchmark
// (bench/gpu/conv3x3_c32_bench) that chose it.
enum class Conv3x3C32Tile {
  kRows8Cols32 = 0,        // 8 warps, filters in shared memory
  kRows4Cols64 = 1,        // 4 warps, filters in shared memory
  kRows4Cols32Global = 2,  // 4 warps, filters read through L1
  kRows8Cols32Global = 3,  // 8 warps, filters read through L1
  kRows2Cols64Global = 4,  // 2 warps, filters read through L1
};
inline constexpr Conv3x3C32Tile kConv3x3C32DefaultTile =
    Conv3x3C32Tile::kRows8Cols32;
std::string Conv3x3C32TileName(Conv3x3C32Tile tile);

// The filter bank in the kernel's order: `oihw` is PyTorch's (32, 32, 3, 3)
// weight (any BatchNorm folded in). Returns kConv3x3C32PackedFloats floats,
// each rounded to TF32 (cvt.rna), laid out as the mma B fragments each lane
// reads; InvalidArgument for another size.
absl::StatusOr<std::vector<float>> PackConv3x3C32Weights(
    std::span<const float> oihw);

struct Conv3x3C32Params {
  const float* x = nullptr;               // (n, h, w, 32)
  const float* packed_weights = nullptr;  // PackConv3x3C32Weights, on device
  const float* bias = nullptr;            // (32)
  const float* residual = nullptr;        // (n, h, w, 32) or null
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

// Host model of the kernel's rounding: the float `v` rounded to TF32 as
// cvt.rna.tf32.f32 does (for the tests' TF32-exact reference).
float RoundToTf32(float v);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_CONV3X3_C32_H_
