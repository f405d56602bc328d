#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "engine/common/indexed_min_heap.h"
#include "kernels/centroid_linkage.h"
#include "kernels/shared_memory_opt_in.h"

namespace diarization::kernels {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
// Update-pass rounds of the block over the clusters.
constexpr int kRounds = kCentroidLinkageMaxN / kThreads;
static_assert(kRounds * kThreads == kCentroidLinkageMaxN);

// scipy _hierarchy_distance_update.pxi `_centroid`, the host's
// CentroidUpdate: the same operations in the same order, each rounded to
// nearest on its own (no FMA).
__device__ __forceinline__ double CentroidUpdate(double d_xi, double d_yi,
                                                 double d_xy, int nx, int ny) {
  const double a = __dmul_rn(__dmul_rn(static_cast<double>(nx), d_xi), d_xi);
  const double b = __dmul_rn(__dmul_rn(static_cast<double>(ny), d_yi), d_yi);
  const double c =
      __dmul_rn(__dmul_rn(static_cast<double>(nx * ny), d_xy), d_xy);
  const double s = static_cast<double>(nx + ny);
  return __dsqrt_rn(__ddiv_rn(__dsub_rn(__dadd_rn(a, b), __ddiv_rn(c, s)), s));
}

// (value, index) with the host scan's rule: the first strict minimum, i.e.
// the smallest index among equal values; (inf, -1) when nothing is below
// infinity (NaN never wins, as `v < best` is false for it).
struct ArgMin {
  double value;
  int key;
};
__device__ __forceinline__ ArgMin Better(ArgMin a, ArgMin b) {
  if (b.value < a.value) return b;
  if (b.value == a.value && b.key >= 0 && (a.key < 0 || b.key < a.key)) {
    return b;
  }
  return a;
}
__device__ __forceinline__ ArgMin WarpArgMin(ArgMin m) {
  for (int off = 16; off > 0; off >>= 1) {
    ArgMin o;
    o.value = __shfl_down_sync(kFull, m.value, off);
    o.key = __shfl_down_sync(kFull, m.key, off);
    m = Better(m, o);
  }
  return m;
}
// Every thread calls it; every thread gets the block's result.
__device__ ArgMin BlockArgMin(ArgMin m, ArgMin* warp_best) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  m = WarpArgMin(m);
  if (lane == 0) warp_best[warp] = m;
  __syncthreads();
  if (warp == 0) {
    ArgMin w = lane < kWarps
                   ? warp_best[lane]
                   : ArgMin{__longlong_as_double(0x7ff0000000000000LL), -1};
    w = WarpArgMin(w);
    if (lane == 0) warp_best[kWarps] = w;
  }
  __syncthreads();
  const ArgMin r = warp_best[kWarps];
  __syncthreads();  // warp_best is reused by the next call
  return r;
}

// The host's initial find_min for every row x < n - 1, one warp per row.
__global__ void InitialNeighboursKernel(const double* m, int n, int* neighbor,
                                        double* min_dist) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= n - 1) return;
  const double* row = m + static_cast<size_t>(warp) * n;
  ArgMin best{__longlong_as_double(0x7ff0000000000000LL), -1};
  for (int j = warp + 1 + lane; j < n; j += 32) {
    const double v = row[j];
    if (v < best.value) best = {v, j};
  }
  best = WarpArgMin(best);
  if (lane == 0) {
    neighbor[warp] = best.key;
    min_dist[warp] = best.value;
  }
}

struct Shared {
  double* values;   // n: min_dist / the heap's values, by key
  double* pending;  // n: this merge's new candidate values
  // n: d(z, neighbor[z]) as the matrix holds it now, kept beside each
  // neighbour change and each update of that entry, so the candidate's
  // exactness test (the host's `dist == row(x)[y]`) reads shared memory
  // instead of a matrix entry in device memory.
  double* current;
  double* heap_values;   // n: the heap's values by heap position
  int* heap;             // n
  int* pos;              // n
  int* neighbor;         // n
  int* size;             // n
  int* cluster_id;       // n
  unsigned* flags;       // ceil(n / 32): which pending values change the heap
  unsigned char* alive;  // n
};

__host__ __device__ size_t SharedBytes(int n) {
  const size_t words = (static_cast<size_t>(n) + 31) / 32;
  return 4 * sizeof(double) * n + 5 * sizeof(int) * n +
         sizeof(unsigned) * words + n + 16;
}

__device__ Shared Carve(unsigned char* base, int n) {
  Shared s;
  s.values = reinterpret_cast<double*>(base);
  s.pending = s.values + n;
  s.current = s.pending + n;
  s.heap_values = s.current + n;
  s.heap = reinterpret_cast<int*>(s.heap_values + n);
  s.pos = s.heap + n;
  s.neighbor = s.pos + n;
  s.size = s.neighbor + n;
  s.cluster_id = s.size + n;
  s.flags = reinterpret_cast<unsigned*>(s.cluster_id + n);
  s.alive = reinterpret_cast<unsigned char*>(s.flags + (n + 31) / 32);
  return s;
}

__global__ void __launch_bounds__(kThreads, 1)
    MergeLoopKernel(double* m, int n, const int* init_neighbor,
                    const double* init_min, LinkageMerge* merges, int* error) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ ArgMin warp_best[kWarps + 1];
  __shared__ int s_x, s_y, s_nx, s_ny, s_exact;
  __shared__ double s_dist;
  const Shared s = Carve(smem, n);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int words = (n + 31) / 32;
  const double inf = __longlong_as_double(0x7ff0000000000000LL);

  for (int i = tid; i < n; i += kThreads) {
    s.values[i] = i < n - 1 ? init_min[i] : inf;
    s.current[i] = s.values[i];
    s.neighbor[i] = i < n - 1 ? init_neighbor[i] : -1;
    s.heap[i] = i;
    s.pos[i] = i;
    s.size[i] = 1;
    s.cluster_id[i] = i;
    s.alive[i] = 1;
  }
  __syncthreads();
  // The host's heap (run by thread 0 only, which alone touches it).
  IndexedMinHeap heap{s.values, s.heap_values, s.heap, s.pos, n - 1};
  if (tid == 0) heap.Heapify();
  __syncthreads();

  // Thread 0's record of merge k of x into y at `dist` (the heap's
  // RemoveMin comes later, beside the update pass's loads).
  auto record = [&](int k, int x, int y, double dist) {
    int id_x = s.cluster_id[x], id_y = s.cluster_id[y];
    const int nx = s.size[x], ny = s.size[y];
    if (id_x > id_y) {
      const int t = id_x;
      id_x = id_y;
      id_y = t;
    }
    merges[k] = LinkageMerge{id_x, id_y, nx + ny, 0, dist};
    s.size[x] = 0;
    s.size[y] = nx + ny;
    s.cluster_id[y] = n + k;
    s.alive[x] = 0;
    s_nx = nx;
    s_ny = ny;
  };

  for (int k = 0; k < n - 1; ++k) {
    // Pop candidates until one is still exact (lazy repair); the heap's
    // size lives in thread 0's copy only, which alone touches the heap. An
    // exact candidate is recorded before the barrier that announces it.
    for (int it = 0; it < n - k; ++it) {
      if (tid == 0) {
        const int x = s.heap[0];
        const double dist = heap.top_value();
        const int y = s.neighbor[x];
        const bool exact = y >= 0 && dist == s.current[x];
        s_x = x;
        s_y = y;
        s_dist = dist;
        s_exact = exact;
        if (exact) record(k, x, y, dist);
      }
      __syncthreads();
      if (s_exact) break;
      const int x = s_x;
      const double* rx = m + static_cast<size_t>(x) * n;
      // The host's find_min(x) over the live j > x: every round's load
      // first (one memory latency per repair instead of one per round),
      // then this thread's first strict minimum in ascending j.
      double row[kRounds];
#pragma unroll
      for (int r = 0; r < kRounds; ++r) {
        const int j = x + 1 + r * kThreads + tid;
        row[r] = j < n && s.alive[j] ? rx[j] : inf;
      }
      ArgMin best{inf, -1};
#pragma unroll
      for (int r = 0; r < kRounds; ++r) {
        const int j = x + 1 + r * kThreads + tid;
        if (j < n && s.alive[j] && row[r] < best.value) best = {row[r], j};
      }
      best = BlockArgMin(best, warp_best);
      if (tid == 0) {
        s_y = best.key;
        s_dist = best.value;
        s.neighbor[x] = best.key;
        s.current[x] = best.value;
        heap.ChangeValue(x, best.value);
      }
      __syncthreads();
    }
    const int x = s_x, y = s_y;
    const double dist = s_dist;
    if (!s_exact) {
      // No exact candidate within the host's bound of tries: the host takes
      // the last repaired one.
      if (y < 0) {
        if (tid == 0) *error = 1;
        return;
      }
      if (tid == 0) record(k, x, y, dist);
      __syncthreads();
    }
    const int nx = s_nx, ny = s_ny;
    const double* rx = m + static_cast<size_t>(x) * n;
    double* ry = m + static_cast<size_t>(y) * n;
    // The host's one pass over the live clusters: the update of d(z, y)
    // and its mirror, the neighbour hand-over x -> y, the candidates that
    // improve (applied to the heap below, in ascending z), and y's own
    // nearest neighbour among the new values (the host's find_min(y)).
    ArgMin best{inf, -1};
    // y's neighbour before this merge: its entry's new value is y's
    // `current` unless y finds a new neighbour below.
    const int y_neighbor = s.neighbor[y];
    // Every round's two loads first (they are independent), then the
    // arithmetic: one memory latency per merge instead of one per round.
    double dx[kRounds], dy[kRounds];
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int z = r * kThreads + tid;
      if (z < n && s.alive[z] && z != y) {
        dx[r] = rx[z];
        dy[r] = ry[z];
      }
    }
    // Thread 0 takes the merged candidate off the heap while the loads are
    // in flight: it touches only the heap's order (heap, pos), which nothing
    // in this pass reads, and it still precedes the pass's heap updates.
    if (tid == 0) heap.RemoveMin();
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int z = r * kThreads + tid;
      bool improves = false;
      if (z < n && s.alive[z] && z != y) {
        const double v = CentroidUpdate(dx[r], dy[r], dist, nx, ny);
        ry[z] = v;
        m[static_cast<size_t>(z) * n + y] = v;
        if (z < x && s.neighbor[z] == x) s.neighbor[z] = y;
        if (z < y && v < s.values[z]) {
          s.neighbor[z] = y;
          s.pending[z] = v;
          improves = true;
        }
        if (s.neighbor[z] == y) s.current[z] = v;
        if (z == y_neighbor) s.current[y] = v;
        if (z > y && v < best.value) best = {v, z};
      }
      const unsigned ballot = __ballot_sync(kFull, improves);
      const int word = r * kWarps + warp;
      if (lane == 0 && word < words) s.flags[word] = ballot;
    }
    best = BlockArgMin(best, warp_best);  // also orders the flags' writes
    if (warp == 0) {
      for (int w0 = 0; w0 < words; w0 += 32) {
        const unsigned word = w0 + lane < words ? s.flags[w0 + lane] : 0u;
        unsigned nonzero = __ballot_sync(kFull, word != 0u);
        while (nonzero != 0u) {
          const int l = __ffs(nonzero) - 1;
          nonzero &= nonzero - 1;
          unsigned bits = __shfl_sync(kFull, word, l);
          if (lane == 0) {
            while (bits != 0u) {
              const int b = __ffs(bits) - 1;
              bits &= bits - 1;
              const int z = (w0 + l) * 32 + b;
              heap.ChangeValue(z, s.pending[z]);
            }
          }
          __syncwarp();
        }
      }
      if (lane == 0 && y < n - 1 && best.key != -1) {
        s.neighbor[y] = best.key;
        s.current[y] = best.value;
        heap.ChangeValue(y, best.value);
      }
    }
    __syncthreads();
  }
}

}  // namespace

absl::Status LaunchCentroidLinkage(const CentroidLinkageParams& p,
                                   cudaStream_t stream) {
  if (p.n < 2 || p.n > kCentroidLinkageMaxN) {
    return absl::InvalidArgumentError("centroid linkage: n must be in [2, " +
                                      std::to_string(kCentroidLinkageMaxN) +
                                      "], got " + std::to_string(p.n));
  }
  if (p.matrix == nullptr || p.merges == nullptr ||
      p.scratch_neighbor == nullptr || p.scratch_min == nullptr ||
      p.error == nullptr) {
    return absl::InvalidArgumentError("centroid linkage: null buffer");
  }
  const int n = p.n;
  const int rows_per_block = 8;  // warps per block
  InitialNeighboursKernel<<<(n - 1 + rows_per_block - 1) / rows_per_block,
                            32 * rows_per_block, 0, stream>>>(
      p.matrix, n, p.scratch_neighbor, p.scratch_min);
  const size_t shared = SharedBytes(n);
  absl::Status opt_in = OptInSharedMemory(
      MergeLoopKernel, static_cast<int>(SharedBytes(kCentroidLinkageMaxN)),
      "MergeLoopKernel");
  if (!opt_in.ok()) return opt_in;
  MergeLoopKernel<<<1, kThreads, shared, stream>>>(
      p.matrix, n, p.scratch_neighbor, p.scratch_min, p.merges, p.error);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(std::string("centroid linkage launch: ") +
                               cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

}  // namespace diarization::kernels
