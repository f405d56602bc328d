// OpenBLAS's thread count: the one knob for how many threads the host
// pipeline's float64 steps use (its DGEMM/DSYRK calls, and the elementwise
// passes beside them that split their rows the same way: ahc.cc). The engine
// sets it for the process (--clustering_blas_threads, engine/runtime/
// host_tasks.h); a benchmark or a tool leaves OpenBLAS's own default (one
// per core, or OPENBLAS_NUM_THREADS).
//
// Declared here rather than taken from a cblas.h, which may be another
// BLAS's header (Debian's alternatives); the binaries link OpenBLAS.
#ifndef DIARIZATION_ENGINE_COMMON_OPENBLAS_THREADS_H_
#define DIARIZATION_ENGINE_COMMON_OPENBLAS_THREADS_H_

extern "C" {
int openblas_get_num_threads(void);
void openblas_set_num_threads(int num_threads);
}

#endif  // DIARIZATION_ENGINE_COMMON_OPENBLAS_THREADS_H_
