#include <cooperative_groups.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/lstm.h"
#include "kernels/lstm_cluster.h"

namespace diarization::kernels {
namespace {

namespace cg = cooperative_groups;

constexpr int kUnitsPerCta = kLstmHidden / kLstmClusterSize;  // 16
constexpr int kRowsPerCta = 4 * kUnitsPerCta;                 // 64
constexpr int kSplit = 4;  // lanes that share one gate row (k-slices)
constexpr int kThreads = kRowsPerCta * kSplit;        // 256
constexpr int kColsPerThread = kLstmHidden / kSplit;  // 32
static_assert(kLstmHidden % kLstmClusterSize == 0);

// Floats per h row (one hidden unit, G windows). G = 16 is padded to 20 so
// that the 4 units a warp reads at once fall in different banks.
template <int G>
constexpr int HStride() {
  return G == 16 ? 20 : G;
}

__device__ __forceinline__ float Sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// G consecutive floats of shared memory, in 16-byte loads where they fit.
template <int G>
__device__ __forceinline__ void LoadH(const float* p, float (&v)[G]) {
  if constexpr (G >= 4) {
#pragma unroll
    for (int i = 0; i < G / 4; ++i) {
      const float4 x = reinterpret_cast<const float4*>(p)[i];
      v[4 * i] = x.x;
      v[4 * i + 1] = x.y;
      v[4 * i + 2] = x.z;
      v[4 * i + 3] = x.w;
    }
  } else if constexpr (G == 2) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x;
    v[1] = x.y;
  } else {
    v[0] = p[0];
  }
}

// Thread t of a CTA: lane-quad q = t % 4 sums columns k = q, q + 4, ... of
// local gate row lr = t / 4 (gate lr / 16, unit 16·rank + lr % 16). Threads
// t < 16·G are also the cell threads: unit 16·rank + t / G of window t % G.
template <int G>
__global__ void __launch_bounds__(kThreads)
    LstmClusterKernel(const float* __restrict__ gates_in,
                      const float* __restrict__ w_hh_t, float* __restrict__ out,
                      int64_t batch, int steps, int64_t groups) {
  constexpr int HS = HStride<G>();
  __shared__ __align__(16) float hbuf[2][kLstmHidden * HS];
  __shared__ float z[kRowsPerCta * G];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int dir = blockIdx.y;
  const int tid = threadIdx.x;
  const int q = tid % kSplit;
  const int lr = tid / kSplit;
  const int row = (lr / kUnitsPerCta) * kLstmHidden + rank * kUnitsPerCta +
                  lr % kUnitsPerCta;
  const float* w =
      w_hh_t + static_cast<int64_t>(dir) * kLstmHidden * kLstmGates;
  float wr[kColsPerThread];
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j)
    wr[j] = w[(q + kSplit * j) * kLstmGates + row];

  const bool cell = tid < kUnitsPerCta * G;
  const int cul = tid / G;  // local unit
  const int cb = tid % G;   // window within the group
  const int cu = rank * kUnitsPerCta + cul;
  const int64_t in_stride = 2 * kLstmGates;
  // Every CTA of the cluster must be running before any of them writes to
  // another's shared memory.
  cluster.sync();

  const int64_t cluster_id = blockIdx.x / kLstmClusterSize;
  const int64_t clusters = gridDim.x / kLstmClusterSize;
  for (int64_t grp = cluster_id; grp < groups; grp += clusters) {
    const int64_t window = grp * G + cb;
    const bool valid = cell && window < batch;
    const float* gin = gates_in + (valid ? window : 0) * steps * in_stride +
                       dir * kLstmGates + cu;
    float c = 0.0f;
    float gi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (valid) {
      const int t0 = dir == 0 ? 0 : steps - 1;
#pragma unroll
      for (int g = 0; g < 4; ++g) gi[g] = gin[t0 * in_stride + g * kLstmHidden];
    }
    for (int s = 0; s < steps; ++s) {
      const int t = dir == 0 ? s : steps - 1 - s;
      const int cur = s & 1;
      // h_{-1} = 0: the first step has no recurrent term.
      if (s > 0) {
        float acc[G];
#pragma unroll
        for (int b = 0; b < G; ++b) acc[b] = 0.0f;
        const float* hc = hbuf[cur];
#pragma unroll
        for (int j = 0; j < kColsPerThread; ++j) {
          float hv[G];
          LoadH<G>(hc + (q + kSplit * j) * HS, hv);
#pragma unroll
          for (int b = 0; b < G; ++b) acc[b] = fmaf(wr[j], hv[b], acc[b]);
        }
        // Fixed butterfly over the 4 lanes of the row: every lane ends with
        // the same bits ((p0 + p1) + (p2 + p3), commuted).
#pragma unroll
        for (int b = 0; b < G; ++b) {
          acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], 1);
          acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], 2);
        }
#pragma unroll
        for (int b = 0; b < G; ++b) {
          if ((b % kSplit) == q) z[lr * G + b] = acc[b];
        }
      }
      __syncthreads();
      if (cell) {
        float pre[4];
#pragma unroll
        for (int g = 0; g < 4; ++g) {
          pre[g] = s > 0 ? gi[g] + z[(g * kUnitsPerCta + cul) * G + cb] : gi[g];
        }
        // Next step's input gates, in flight during this step's barrier and
        // the next matrix-vector product.
        if (valid && s + 1 < steps) {
          const int tn = dir == 0 ? s + 1 : steps - 2 - s;
#pragma unroll
          for (int g = 0; g < 4; ++g)
            gi[g] = gin[tn * in_stride + g * kLstmHidden];
        }
        const float ig = Sigmoid(pre[0]);
        const float fg = Sigmoid(pre[1]);
        const float gg = tanhf(pre[2]);
        const float og = Sigmoid(pre[3]);
        c = fg * c + ig * gg;
        const float hv = valid ? og * tanhf(c) : 0.0f;
        if (valid) {
          out[(window * steps + t) * (2 * kLstmHidden) + dir * kLstmHidden +
              cu] = hv;
        }
        // Broadcast to every CTA's next h buffer (this one's included): a
        // warp writes 32 consecutive floats to each.
        float* hn = &hbuf[cur ^ 1][cu * HS + cb];
#pragma unroll
        for (int r = 0; r < kLstmClusterSize; ++r)
          *cluster.map_shared_rank(hn, r) = hv;
      }
      // Release/acquire across the cluster: the h writes are visible to
      // every CTA after it, and nobody overwrites a buffer still being read
      // (the buffer written at step s is read at s + 1 and rewritten at
      // s + 2, after the next barrier).
      cluster.sync();
    }
  }
}

template <int G>
void* KernelFor() {
  return reinterpret_cast<void*>(&LstmClusterKernel<G>);
}

void* KernelForGroup(int group) {
  switch (group) {
    case 1:
      return KernelFor<1>();
    case 2:
      return KernelFor<2>();
    case 4:
      return KernelFor<4>();
    case 8:
      return KernelFor<8>();
    case 16:
      return KernelFor<16>();
    default:
      return nullptr;
  }
}

cudaLaunchConfig_t Config(int clusters_per_direction, cudaStream_t stream,
                          cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(
      static_cast<unsigned>(kLstmClusterSize * clusters_per_direction), 2, 1);
  config.blockDim = dim3(kThreads, 1, 1);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = kLstmClusterSize;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  return config;
}

// cudaOccupancyMaxActiveClusters per (device, group): the answer depends on
// the device and the kernel only, and is asked at every launch.
absl::StatusOr<int> MaxActiveClusters(int device, int group) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find({device, group});
    if (it != cache.end()) return it->second;
  }
  int cluster_launch = 0, major = 0;
  cudaError_t err =
      cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                 device);
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrCat(
        "LstmCluster: cudaDeviceGetAttribute: ", cudaGetErrorString(err)));
  }
  int n = 0;
  if (cluster_launch != 0 && major >= 9) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = Config(1, nullptr, &attr);
    err = cudaOccupancyMaxActiveClusters(&n, KernelForGroup(group), &config);
    if (err != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("LstmCluster: cudaOccupancyMaxActiveClusters: ",
                       cudaGetErrorString(err)));
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  cache[{device, group}] = n;
  return n;
}

}  // namespace

absl::StatusOr<LstmClusterPlan> PlanLstmCluster(const LstmClusterParams& p) {
  if (p.batch <= 0 || p.steps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LstmCluster: batch ", p.batch, " and steps ", p.steps,
                     " must be positive"));
  }
  if (!(p.device_share > 0.0 && p.device_share <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LstmCluster: device_share ", p.device_share, " is not in (0, 1]"));
  }
  LstmClusterPlan plan;
  plan.group = p.group;
  if (plan.group == 0) {
    plan.group = 1;
    while (plan.group < 8 && plan.group < p.batch) plan.group *= 2;
  }
  if (KernelForGroup(plan.group) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LstmCluster: group ", p.group, " is not 0, 1, 2, 4, 8 or 16"));
  }
  plan.groups = (p.batch + plan.group - 1) / plan.group;
  int device = 0;
  if (cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("LstmCluster: cudaGetDevice: ", cudaGetErrorString(err)));
  }
  absl::StatusOr<int> active = MaxActiveClusters(device, plan.group);
  if (!active.ok()) return active.status();
  plan.max_active_clusters = *active;
  if (plan.max_active_clusters < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "LstmCluster: device ", device, " can hold ", plan.max_active_clusters,
        " clusters of ", kLstmClusterSize,
        " CTAs at once (needs sm_90 cluster launch and room for 2)"));
  }
  const int64_t share =
      static_cast<int64_t>(p.device_share * plan.max_active_clusters / 2);
  plan.clusters_per_direction = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(share, plan.groups)));
  return plan;
}

absl::Status LaunchLstmClusterRecurrence(const LstmClusterParams& p,
                                         cudaStream_t stream) {
  if (p.gates_in == nullptr || p.w_hh_t == nullptr || p.out == nullptr) {
    return absl::InvalidArgumentError("LstmCluster: null buffer");
  }
  absl::StatusOr<LstmClusterPlan> plan = PlanLstmCluster(p);
  if (!plan.ok()) return plan.status();
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config =
      Config(plan->clusters_per_direction, stream, &attr);
  cudaError_t err = cudaSuccess;
  switch (plan->group) {
#define LSTM_CLUSTER_CASE(G)                                                   \
  case G:                                                                      \
    err = cudaLaunchKernelEx(&config, LstmClusterKernel<G>, p.gates_in,        \
                             p.w_hh_t, p.out, p.batch, p.steps, plan->groups); \
    break;
    LSTM_CLUSTER_CASE(1)
    LSTM_CLUSTER_CASE(2)
    LSTM_CLUSTER_CASE(4)
    LSTM_CLUSTER_CASE(8)
    LSTM_CLUSTER_CASE(16)
#undef LSTM_CLUSTER_CASE
  }
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("LstmClusterKernel<", plan->group,
                     "> launch failed: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
