#include "engine/common/openblas_kernels.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

// OpenBLAS's own entry point (declared here rather than through a cblas.h,
// which may be another BLAS's header).
extern "C" char* openblas_get_corename(void);

namespace diarization {
namespace {

// Set beside OPENBLAS_CORETYPE when this file chose it: the kernel set the
// library had fallen back to, for the log line after the second start.
constexpr char kFallbackVar[] = "DIARIZATION_OPENBLAS_FALLBACK";

// OpenBLAS's x86-64 kernel sets without AVX2 (its dynamic.c core names).
constexpr std::array<std::string_view, 16> kPreAvx2Cores = {
    "katmai",     "coppermine", "northwood", "prescott",
    "banias",     "atom",       "core2",     "penryn",
    "dunnington", "nehalem",    "opteron",   "opteron_sse3",
    "barcelona",  "bobcat",     "nano",      "sandybridge"};

}  // namespace

CpuVectorFeatures DetectCpuVectorFeatures() {
  __builtin_cpu_init();
  CpuVectorFeatures f;
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512_skylakex =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return f;
}

std::optional<std::string> OpenBlasCoreOverride(std::string_view detected,
                                                const CpuVectorFeatures& cpu) {
  if (!cpu.avx2_fma) return std::nullopt;  // the fallback may be right
  std::string core(detected);
  for (char& c : core) c = absl::ascii_tolower(c);
  bool pre_avx2 = false;
  for (std::string_view c : kPreAvx2Cores) pre_avx2 |= core == c;
  if (!pre_avx2) return std::nullopt;
  return std::string(cpu.avx512_skylakex ? "SkylakeX" : "Haswell");
}

std::string OpenBlasCoreName() {
  const char* name = openblas_get_corename();
  return name == nullptr ? std::string("unknown") : std::string(name);
}

std::string ReexecWithOpenBlasKernels(char** argv) {
  const std::string core = OpenBlasCoreName();
  if (const char* fallback = std::getenv(kFallbackVar)) {
    return absl::StrCat("OpenBLAS kernels: ", core,
                        " (set by this binary: the library had fallen back to ",
                        fallback, " on this CPU)");
  }
  if (const char* user = std::getenv("OPENBLAS_CORETYPE")) {
    return absl::StrCat("OpenBLAS kernels: ", core,
                        " (OPENBLAS_CORETYPE=", user, ")");
  }
  const std::optional<std::string> wanted =
      OpenBlasCoreOverride(core, DetectCpuVectorFeatures());
  if (!wanted.has_value()) {
    return absl::StrCat("OpenBLAS kernels: ", core, " (the library's choice)");
  }
  if (argv == nullptr || argv[0] == nullptr ||
      setenv("OPENBLAS_CORETYPE", wanted->c_str(), 1) != 0 ||
      setenv(kFallbackVar, core.c_str(), 1) != 0) {
    return absl::StrCat("OpenBLAS kernels: ", core,
                        " (slow: the library fell back to them on a CPU with "
                        "AVX2; set OPENBLAS_CORETYPE=",
                        *wanted, ")");
  }
  execv("/proc/self/exe", argv);
  // Still here: the execution failed. Run on, slower, and say so.
  const int err = errno;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kFallbackVar);
  return absl::StrCat("OpenBLAS kernels: ", core,
                      " (slow: the library fell back to them on a CPU with "
                      "AVX2, and executing this binary again with "
                      "OPENBLAS_CORETYPE=",
                      *wanted, " failed: ", std::strerror(err),
                      "; set it in the environment)");
}

}  // namespace diarization
