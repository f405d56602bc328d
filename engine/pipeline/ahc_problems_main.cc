// Runs the AHC of ahc.h on a file of problems and writes its linkage and
// labels, for ahc_scipy_parity_test (which makes the problems and asks
// scipy for its answer).
//
//   ahc_problems IN OUT
// IN: little-endian int32 count, then per problem int32 n, d, float64
// threshold and n·d float32 raw embeddings (row-major). OUT: per problem
// (n−1) merges as float64 a, b, distance, size (scipy's Z rows), then n
// int32 labels of AhcCluster.
//
// Like the production binaries (ADR 0080) it runs with the kernels
// ReexecWithOpenBlasKernels chooses.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <vector>

#include "engine/common/openblas_kernels.h"
#include "engine/pipeline/ahc.h"

namespace {
bool Read(std::ifstream& in, void* v, size_t bytes) {
  return static_cast<bool>(in.read(static_cast<char*>(v), bytes));
}
}  // namespace

int main(int argc, char** argv) {
  diarization::ReexecWithOpenBlasKernels(argv);
  namespace dp = diarization::pipeline;
  if (argc != 3) {
    std::cerr << "usage: ahc_problems IN OUT\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::ofstream out(argv[2], std::ios::binary);
  int32_t count = 0;
  if (!in || !out || !Read(in, &count, sizeof count) || count < 0) {
    std::cerr << "ahc_problems: cannot read " << argv[1] << " or write "
              << argv[2] << "\n";
    return 1;
  }
  for (int p = 0; p < count; ++p) {
    int32_t nd[2];
    double threshold = 0.0;
    if (!Read(in, nd, sizeof nd) || !Read(in, &threshold, sizeof threshold) ||
        nd[0] < 2 || nd[1] < 1) {
      std::cerr << "ahc_problems: bad header of problem " << p << "\n";
      return 1;
    }
    const int n = nd[0], d = nd[1];
    std::vector<float> x(static_cast<size_t>(n) * d);
    if (!Read(in, x.data(), sizeof(float) * x.size())) {
      std::cerr << "ahc_problems: problem " << p << " is truncated\n";
      return 1;
    }
    // The linkage twice, on purpose: Z from the steps, the labels from
    // AhcCluster, the production entry (its own normalisation, pdist path
    // and the np.unique renumbering), so the test covers both.
    const std::vector<float> normed = dp::NormalizeRowsF32(x, n, d);
    dp::SquareMatrix square = dp::PdistSquare(normed, n, d);
    const std::vector<dp::Merge> z = dp::CentroidLinkageSquare(square, n);
    std::vector<double> rows;
    rows.reserve(z.size() * 4);
    for (const dp::Merge& m : z) {
      rows.insert(rows.end(),
                  {static_cast<double>(m.a), static_cast<double>(m.b),
                   m.distance, static_cast<double>(m.size)});
    }
    dp::AhcOptions options;
    options.threshold = threshold;
    const std::vector<int> labels = dp::AhcCluster(x, n, d, options);
    const std::vector<int32_t> l(labels.begin(), labels.end());
    out.write(reinterpret_cast<const char*>(rows.data()),
              sizeof(double) * rows.size());
    out.write(reinterpret_cast<const char*>(l.data()),
              sizeof(int32_t) * l.size());
  }
  return out ? 0 : 1;
}
