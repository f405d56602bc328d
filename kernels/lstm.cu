#include <string>

#include "kernels/lstm.h"
#include "kernels/shared_memory_opt_in.h"

namespace diarization::kernels {
namespace {

constexpr int kGroup = 4;  // windows per block

__device__ __forceinline__ float Sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

__global__ void __launch_bounds__(kLstmGates)
    LstmRecurrenceKernel(const float* __restrict__ gates_in,
                         const float* __restrict__ w_hh_t,
                         float* __restrict__ out, int64_t batch, int steps) {
  __shared__ float h[kGroup][kLstmHidden];
  __shared__ float z[kGroup][kLstmGates];
  const int dir = blockIdx.y;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kGroup;
  const int group =
      static_cast<int>(batch - first < kGroup ? batch - first : kGroup);
  const int row = threadIdx.x;
  const float* w =
      w_hh_t + static_cast<int64_t>(dir) * kLstmHidden * kLstmGates;
  // Cell state: thread (b, u) with b = row / 128 keeps c for unit u of window
  // b.
  const int cb = row / kLstmHidden;
  const int cu = row % kLstmHidden;
  float c = 0.0f;
  for (int b = 0; b < kGroup; ++b) {
    if (row < kLstmHidden) h[b][row] = 0.0f;
  }
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    const int t = dir == 0 ? s : steps - 1 - s;
    float acc[kGroup];
#pragma unroll
    for (int b = 0; b < kGroup; ++b) {
      acc[b] = b < group
                   ? gates_in[((first + b) * steps + t) * (2 * kLstmGates) +
                              dir * kLstmGates + row]
                   : 0.0f;
    }
    // W_hh·h in float32, in k order.
    float rec[kGroup] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (int k = 0; k < kLstmHidden; ++k) {
      const float wk = w[k * kLstmGates + row];
#pragma unroll
      for (int b = 0; b < kGroup; ++b) rec[b] = fmaf(wk, h[b][k], rec[b]);
    }
#pragma unroll
    for (int b = 0; b < kGroup; ++b) z[b][row] = acc[b] + rec[b];
    __syncthreads();
    if (cb < group) {
      const float ig = Sigmoid(z[cb][cu]);
      const float fg = Sigmoid(z[cb][kLstmHidden + cu]);
      const float gg = tanhf(z[cb][2 * kLstmHidden + cu]);
      const float og = Sigmoid(z[cb][3 * kLstmHidden + cu]);
      c = fg * c + ig * gg;
      const float hv = og * tanhf(c);
      h[cb][cu] = hv;
      out[((first + cb) * steps + t) * (2 * kLstmHidden) + dir * kLstmHidden +
          cu] = hv;
    }
    __syncthreads();
  }
}

constexpr int kRegK = 64;  // W_hh columns held in registers
constexpr int kSmemK = kLstmHidden - kRegK;
constexpr size_t kResidentShared =
    sizeof(float) *
    (size_t{kSmemK} * kLstmGates + 4 * kLstmHidden + kGroup * kLstmGates);

// Same arithmetic as LstmRecurrenceKernel, in the same order.
__global__ void __launch_bounds__(kLstmGates, 1)
    LstmResidentKernel(const float* __restrict__ gates_in,
                       const float* __restrict__ w_hh_t,
                       float* __restrict__ out, int64_t batch, int steps) {
  static_assert(kGroup == 4, "h is one float4 per unit");
  extern __shared__ float4 smem4[];
  float4* h4 = smem4;                                     // (128): 4 windows
  float* z = reinterpret_cast<float*>(h4 + kLstmHidden);  // (4, 512)
  float* ws = z + kGroup * kLstmGates;                    // (64, 512)
  const int dir = blockIdx.y;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kGroup;
  const int group =
      static_cast<int>(batch - first < kGroup ? batch - first : kGroup);
  const int row = threadIdx.x;
  const float* w =
      w_hh_t + static_cast<int64_t>(dir) * kLstmHidden * kLstmGates;
  float wr[kRegK];
#pragma unroll
  for (int k = 0; k < kRegK; ++k) wr[k] = w[k * kLstmGates + row];
  for (int k = 0; k < kSmemK; ++k)
    ws[k * kLstmGates + row] = w[(kRegK + k) * kLstmGates + row];
  if (row < kLstmHidden) h4[row] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float* hflat = reinterpret_cast<float*>(h4);
  const int cb = row / kLstmHidden;
  const int cu = row % kLstmHidden;
  float c = 0.0f;
  auto load_gates = [&](int s, float* acc) {
    const int t = dir == 0 ? s : steps - 1 - s;
#pragma unroll
    for (int b = 0; b < kGroup; ++b) {
      acc[b] = b < group
                   ? gates_in[((first + b) * steps + t) * (2 * kLstmGates) +
                              dir * kLstmGates + row]
                   : 0.0f;
    }
  };
  float next[kGroup];
  load_gates(0, next);
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    const int t = dir == 0 ? s : steps - 1 - s;
    float acc[kGroup];
#pragma unroll
    for (int b = 0; b < kGroup; ++b) acc[b] = next[b];
    if (s + 1 < steps) load_gates(s + 1, next);
    float rec[kGroup] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < kRegK; ++k) {
      const float4 hv = h4[k];
      rec[0] = fmaf(wr[k], hv.x, rec[0]);
      rec[1] = fmaf(wr[k], hv.y, rec[1]);
      rec[2] = fmaf(wr[k], hv.z, rec[2]);
      rec[3] = fmaf(wr[k], hv.w, rec[3]);
    }
#pragma unroll 16
    for (int k = 0; k < kSmemK; ++k) {
      const float wk = ws[k * kLstmGates + row];
      const float4 hv = h4[kRegK + k];
      rec[0] = fmaf(wk, hv.x, rec[0]);
      rec[1] = fmaf(wk, hv.y, rec[1]);
      rec[2] = fmaf(wk, hv.z, rec[2]);
      rec[3] = fmaf(wk, hv.w, rec[3]);
    }
#pragma unroll
    for (int b = 0; b < kGroup; ++b) z[b * kLstmGates + row] = acc[b] + rec[b];
    __syncthreads();
    if (cb < group) {
      const float* zb = z + cb * kLstmGates;
      const float ig = Sigmoid(zb[cu]);
      const float fg = Sigmoid(zb[kLstmHidden + cu]);
      const float gg = tanhf(zb[2 * kLstmHidden + cu]);
      const float og = Sigmoid(zb[3 * kLstmHidden + cu]);
      c = fg * c + ig * gg;
      const float hv = og * tanhf(c);
      hflat[cu * kGroup + cb] = hv;
      out[((first + cb) * steps + t) * (2 * kLstmHidden) + dir * kLstmHidden +
          cu] = hv;
    }
    __syncthreads();
  }
}

}  // namespace

absl::Status LaunchLstmRecurrence(const LstmRecurrenceParams& p,
                                  cudaStream_t stream) {
  if (p.gates_in == nullptr || p.w_hh_t == nullptr || p.out == nullptr ||
      p.batch <= 0 || p.steps <= 0) {
    return absl::InvalidArgumentError(
        "LaunchLstmRecurrence: bad buffers or sizes");
  }
  static_assert(kGroup * kLstmHidden == kLstmGates,
                "one cell thread per (window, unit)");
  const dim3 grid(static_cast<unsigned>((p.batch + kGroup - 1) / kGroup), 2);
  if (p.resident_weights) {
    // Above 48 KiB of shared memory a kernel needs an explicit opt-in, on
    // each device.
    if (absl::Status s = OptInSharedMemory(LstmResidentKernel,
                                           static_cast<int>(kResidentShared),
                                           "LstmResidentKernel");
        !s.ok()) {
      return s;
    }
    LstmResidentKernel<<<grid, kLstmGates, kResidentShared, stream>>>(
        p.gates_in, p.w_hh_t, p.out, p.batch, p.steps);
  } else {
    LstmRecurrenceKernel<<<grid, kLstmGates, 0, stream>>>(
        p.gates_in, p.w_hh_t, p.out, p.batch, p.steps);
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        std::string("LstmRecurrenceKernel launch failed: ") +
        cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
