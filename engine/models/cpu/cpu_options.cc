#include "engine/models/cpu/cpu_options.h"

#include <omp.h>

namespace diarization::models {

std::vector<CpuRunChunk> CpuRunChunks(int batch, int max_windows_per_run) {
  const int most = max_windows_per_run < 1 ? 1 : max_windows_per_run;
  std::vector<CpuRunChunk> chunks;
  int first = 0;
  for (; batch - first >= most; first += most) chunks.push_back({first, most});
  for (int size = 1 << 30; first < batch; size >>= 1) {
    if (batch - first >= size) {
      chunks.push_back({first, size});
      first += size;
    }
  }
  return chunks;
}

void ApplyCpuThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace diarization::models
