// Options shared by the CPU networks.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_
#define DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_

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
};

// Applies `threads` to the calling thread's OpenMP team size (the setting is
// per calling thread, so every Run applies it).
void ApplyCpuThreads(int threads);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_
