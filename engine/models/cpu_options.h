// Options shared by the CPU networks.
#ifndef DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_
#define DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_

namespace diarization::models {

struct CpuModelOptions {
  // OpenMP threads for oneDNN and the element-wise loops; 0 = OpenMP's
  // default (all cores, or OMP_NUM_THREADS).
  int threads = 0;
};

// Applies `threads` to the calling thread's OpenMP team size (the setting is
// per calling thread, so every Run applies it).
void ApplyCpuThreads(int threads);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CPU_OPTIONS_H_
