// Maximum-weight assignment (scipy.optimize.linear_sum_assignment with
// maximize=True): the one implementation, used by the constrained
// assignment of the pipeline (assignment.h) and by the DER's speaker
// mapping (engine/eval/hungarian.h). No Debian C++ library offers
// rectangular real-valued LSAP, so it is hand-written: scipy's own
// formulation (shortest augmenting paths with potentials, Crouse 2016), so
// that where several assignments are optimal the same one comes out.
#ifndef DIARIZATION_ENGINE_PIPELINE_LINEAR_SUM_ASSIGNMENT_H_
#define DIARIZATION_ENGINE_PIPELINE_LINEAR_SUM_ASSIGNMENT_H_

#include <span>
#include <vector>

namespace diarization::pipeline {

// Maximum-weight assignment on a rows × cols matrix (row-major, finite):
// min(rows, cols) pairs, each row and column used at most once. Returns
// col_of_row (−1 for an unassigned row).
std::vector<int> LinearSumAssignmentMax(std::span<const double> score, int rows,
                                        int cols);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_LINEAR_SUM_ASSIGNMENT_H_
