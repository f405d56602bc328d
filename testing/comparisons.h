// Error measures the network parity tests share (CPU vs CUDA vs pyannote).
#ifndef DIARIZATION_TESTING_COMPARISONS_H_
#define DIARIZATION_TESTING_COMPARISONS_H_

#include <vector>

namespace diarization::testing {

// max |a[i] - b[i]|; infinity if either side has a non-finite value or the
// sizes differ.
double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b);

// Largest ||a_r - b_r|| / ||b_r|| over rows of `dim` values (embeddings);
// infinity on a non-finite difference or a size mismatch.
double MaxRowRelativeDiff(const std::vector<float>& a,
                          const std::vector<float>& b, int dim);

// Frames (rows of `classes` log-probabilities) where `got` and `ref` pick a
// different class although ref's best two classes are more than `margin`
// apart (near-ties may flip under rounding; clear decisions may not).
int DecisionFlips(const std::vector<float>& got, const std::vector<float>& ref,
                  int classes, double margin);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_COMPARISONS_H_
