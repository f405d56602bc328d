#include "engine/models/cpu_options.h"

#include <omp.h>

namespace diarization::models {

void ApplyCpuThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace diarization::models
