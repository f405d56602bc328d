// OpenBLAS's kernel set on CPUs its build does not know.
//
// OpenBLAS (DYNAMIC_ARCH builds, as Debian's) picks its kernels once, when
// the library is loaded, from the CPU's family and model. Debian 12's
// 0.3.21 does not know Emerald Rapids (family 6, model 207: the Xeon of this
// project's build VMs and of its H200 host, both shown as "Intel(R) Xeon(R)
// Processor") and falls back to its "Prescott" kernels: SSE3, no FMA. Its
// DGEMM then runs at about a third of the core's speed, and the host
// pipeline (AHC's distances, PLDA, VBx, assignment) at about 0.6 of it: one
// thread, 1 audio hour, 0.46-0.55 s instead of 0.34 s on such a VM
// (docs/benchmarks.md, "Round of 2026-12-02, evening"; ADR 0080).
//
// The library honours OPENBLAS_CORETYPE, but reads it only while it loads,
// before main() runs. So a binary calls ReexecWithOpenBlasKernels() first
// in main(): where the library fell back to a pre-AVX2 kernel set on a CPU
// that has AVX2 and FMA, it sets OPENBLAS_CORETYPE (SkylakeX with AVX-512,
// Haswell without) and executes itself again with the same arguments; the
// process keeps its PID, open descriptors and environment. It never
// overrides an OPENBLAS_CORETYPE the operator set, and never executes
// twice. Results do not depend on the kernel set beyond float64 rounding
// (the pipeline's parity tests pass with both).
//
// Why by hand: OpenBLAS has no call that changes its kernels after it has
// loaded, and a newer OpenBLAS is not in Debian 12.
#ifndef DIARIZATION_ENGINE_COMMON_OPENBLAS_KERNELS_H_
#define DIARIZATION_ENGINE_COMMON_OPENBLAS_KERNELS_H_

#include <optional>
#include <string>
#include <string_view>

namespace diarization {

// What the CPU can run (the AVX-512 subset is SkylakeX's kernels': F, CD,
// BW, DQ, VL).
struct CpuVectorFeatures {
  bool avx2_fma = false;
  bool avx512_skylakex = false;
};
CpuVectorFeatures DetectCpuVectorFeatures();

// The OPENBLAS_CORETYPE to run with, or nullopt to keep the library's own
// choice: `detected` is openblas_get_corename() (any case); a pre-AVX2 kernel
// set on a CPU with AVX2 and FMA is a fallback, not a choice.
std::optional<std::string> OpenBlasCoreOverride(std::string_view detected,
                                                const CpuVectorFeatures& cpu);

// The kernel set OpenBLAS loaded with in this process.
std::string OpenBlasCoreName();

// See the file comment. Returns (when it does not execute again) one line
// for the binary's log: the kernel set and why, e.g. "OpenBLAS kernels:
// SkylakeX (set by this binary: the library fell back to Prescott on this
// CPU)". `argv` is main()'s, null-terminated.
std::string ReexecWithOpenBlasKernels(char** argv);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_OPENBLAS_KERNELS_H_
