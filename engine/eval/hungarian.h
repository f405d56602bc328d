// Maximum-weight one-to-one assignment (the Hungarian algorithm), the role
// scipy.optimize.linear_sum_assignment plays in pyannote.metrics: the
// pipeline's one implementation (engine/pipeline/linear_sum_assignment.h)
// on a matrix given as rows. No C++ library packaged in Debian solves
// rectangular real-valued assignment (dlib's max_cost_assignment needs a
// square integer matrix; OR-tools and the like are not packaged).
#ifndef DIARIZATION_ENGINE_EVAL_HUNGARIAN_H_
#define DIARIZATION_ENGINE_EVAL_HUNGARIAN_H_

#include <vector>

namespace diarization::eval {

// `weight` is rows × columns (every row the same length). Returns, for each
// row, the column assigned to it or -1, such that every column is used at
// most once, min(rows, columns) rows are assigned, and the sum of the
// assigned weights is maximal. Ties are broken arbitrarily.
std::vector<int> MaximumWeightAssignment(
    const std::vector<std::vector<double>>& weight);

}  // namespace diarization::eval

#endif  // DIARIZATION_ENGINE_EVAL_HUNGARIAN_H_
