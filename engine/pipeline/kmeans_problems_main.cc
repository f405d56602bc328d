// Runs KMeans on a file of problems and writes the labels, for
// kmeans_sklearn_parity_test (which makes the problems and asks
// scikit-learn for its answer).
//
//   kmeans_problems IN OUT
//   kmeans_problems --blas-core
// IN: little-endian int32 count, then per problem int32 n, d, k, threads and
// n·d float32 (row-major). OUT: per problem n int32 labels. --blas-core
// prints the OpenBLAS kernel set the solver runs with, so that the test can
// require sklearn's: kmeans.h is exact only where both run the same kernels.
//
// Like the production binaries (ADR 0080) it runs with the kernels
// ReexecWithOpenBlasKernels chooses, or those of OPENBLAS_CORETYPE.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/common/openblas_kernels.h"
#include "engine/pipeline/kmeans.h"

namespace {
bool ReadInts(std::ifstream& in, int32_t* v, int count) {
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(v), sizeof(int32_t) * count));
}
}  // namespace

int main(int argc, char** argv) {
  diarization::ReexecWithOpenBlasKernels(argv);
  if (argc == 2 && std::string(argv[1]) == "--blas-core") {
    std::cout << diarization::OpenBlasCoreName() << "\n";
    return 0;
  }
  if (argc != 3) {
    std::cerr
        << "usage: kmeans_problems IN OUT | kmeans_problems --blas-core\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::ofstream out(argv[2], std::ios::binary);
  int32_t count = 0;
  if (!in || !out || !ReadInts(in, &count, 1) || count < 0) {
    std::cerr << "kmeans_problems: cannot read " << argv[1] << " or write "
              << argv[2] << "\n";
    return 1;
  }
  for (int p = 0; p < count; ++p) {
    int32_t h[4];
    if (!ReadInts(in, h, 4) || h[0] < 1 || h[1] < 1 || h[2] < 1 ||
        h[2] > h[0] || h[3] < 1) {
      std::cerr << "kmeans_problems: bad header of problem " << p << "\n";
      return 1;
    }
    std::vector<float> x(static_cast<size_t>(h[0]) * h[1]);
    if (!in.read(reinterpret_cast<char*>(x.data()), sizeof(float) * x.size())) {
      std::cerr << "kmeans_problems: problem " << p << " is truncated\n";
      return 1;
    }
    diarization::pipeline::KMeansOptions options;
    options.threads = h[3];
    const std::vector<int> labels =
        diarization::pipeline::KMeans(x, h[0], h[1], h[2], options);
    std::vector<int32_t> l(labels.begin(), labels.end());
    out.write(reinterpret_cast<const char*>(l.data()),
              sizeof(int32_t) * l.size());
  }
  return out ? 0 : 1;
}
