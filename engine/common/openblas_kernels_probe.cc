// Test helper of openblas_kernels_test: calls ReexecWithOpenBlasKernels as a
// binary's main() does, then prints its log line, the kernel set OpenBLAS
// runs with, and the arguments it was started with (one per line).
#include <cstdio>

#include "engine/common/openblas_kernels.h"

int main(int argc, char** argv) {
  const std::string line = diarization::ReexecWithOpenBlasKernels(argv);
  std::printf("line=%s\ncore=%s\n", line.c_str(),
              diarization::OpenBlasCoreName().c_str());
  for (int i = 1; i < argc; ++i) std::printf("arg=%s\n", argv[i]);
  return 0;
}
