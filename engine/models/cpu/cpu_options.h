// Options shared by the CPU networks.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_CPU_OPTIONS_H_
#define DIARIZATION_ENGINE_MODELS_CPU_CPU_OPTIONS_H_

#include <vector>

namespace diarization::models {

// How the segmentation network runs its bidirectional LSTM layers.
enum class CpuLstmImpl {
  // Input projections for all frames as one oneDNN matmul, then the
  // recurrence per direction on its own thread (no barrier per time step).
  kProjectionRecurrence,
  // oneDNN's lstm_forward primitive (bidirectional_concat).
  kOneDnnPrimitive,
};

struct CpuModelOptions {
  // OpenMP threads for oneDNN and the element-wise loops; 0 = OpenMP's
  // default (all cores, or OMP_NUM_THREADS).
  int threads = 0;
  CpuLstmImpl lstm = CpuLstmImpl::kProjectionRecurrence;
  // Most windows one network run holds activations for (>= 1). A larger
  // batch runs as consecutive runs (CpuRunChunks), so a network's memory is
  // fixed whatever batch the engine forms: each run size keeps its own
  // buffers, about 40 MB per window for the embedding network and 13 MB for
  // the segmentation network, so runs of 4, 2 and 1 hold 7 windows' worth
  // (0.37 GB) where batches of every size up to 32 held up to 528 windows'.
  // The CPU gains little from larger runs (cpu_networks_bench, 2 threads:
  // 12% more CPU per window at 4 than at 32, none at 8), and a window's
  // outputs do not depend on its batch-mates (ADR 0083, cpu_*_model_test),
  // so the results are the same bit for bit.
  int max_windows_per_run = 4;
};

// One network run over windows [first, first + count) of a batch.
struct CpuRunChunk {
  int first = 0;
  int count = 0;
};

// How a batch of `batch` windows is run with at most `max_windows_per_run`
// windows per run: as many full runs as fit, then the rest as powers of two,
// largest first. So a network only ever sees max_windows_per_run and powers
// of two below it as run sizes (at most log2(max) + 2 plans).
std::vector<CpuRunChunk> CpuRunChunks(int batch, int max_windows_per_run);

// Applies `threads` to the calling thread's OpenMP team size (the setting is
// per calling thread, so every Run applies it).
void ApplyCpuThreads(int threads);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_CPU_OPTIONS_H_
