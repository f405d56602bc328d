#include "engine/eval/hungarian.h"

#include "engine/pipeline/linear_sum_assignment.h"

namespace diarization::eval {

std::vector<int> MaximumWeightAssignment(
    const std::vector<std::vector<double>>& weight) {
  const int rows = static_cast<int>(weight.size());
  const int columns = rows == 0 ? 0 : static_cast<int>(weight[0].size());
  std::vector<double> flat;
  flat.reserve(static_cast<size_t>(rows) * columns);
  for (const std::vector<double>& row : weight) {
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return pipeline::LinearSumAssignmentMax(flat, rows, columns);
}

}  // namespace diarization::eval
