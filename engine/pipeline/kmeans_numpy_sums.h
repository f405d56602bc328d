// numpy's float summation orders, where scikit-learn's KMeans depends on
// them (numpy 2.x on x86-64, whose baseline SIMD is 128-bit and has no FMA):
//   - add.reduce over a contiguous axis (np.sum, np.mean): pairwise sum with
//     8 accumulators and 128-element blocks (loops_utils.h.src);
//   - np.einsum("ij,ij->i", X, X) (sklearn's row_norms): one 4-lane (float)
//     or 2-lane (double) accumulator, 4 vectors per step taken last to
//     first, multiply then add, then a horizontal sum
//     (einsum_sumprod.c.src, simd/sse/arithmetic.h).
// Checked against numpy through KMeans by kmeans_sklearn_parity_test; the
// orders themselves by constructed cases in kmeans_test.
#ifndef DIARIZATION_ENGINE_PIPELINE_KMEANS_NUMPY_SUMS_H_
#define DIARIZATION_ENGINE_PIPELINE_KMEANS_NUMPY_SUMS_H_

#include <cstdint>

namespace diarization::pipeline {

// np.add.reduce(a[:n]) for float32 (float accumulators, as numpy).
float NumpyPairwiseSum(const float* a, int64_t n);

// np.einsum("i,i->", v, v) over d elements, as row_norms(squared=True).
float NumpySquaredNorm(const float* v, int d);
double NumpySquaredNorm(const double* v, int d);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_KMEANS_NUMPY_SUMS_H_
