#include "engine/pipeline/linear_sum_assignment.h"

#include <limits>

namespace diarization::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Minimum-cost assignment of every row (rows <= cols) by successive shortest
// augmenting paths with potentials (Hungarian method, O(rows²·cols)).
std::vector<int> MinCostRowsToCols(const std::vector<double>& cost, int rows,
                                   int cols) {
  // 1-based arrays as in the textbook formulation; column 0 is virtual.
  std::vector<double> u(rows + 1, 0.0), v(cols + 1, 0.0);
  std::vector<int> p(cols + 1, 0), way(cols + 1, 0);
  for (int i = 1; i <= rows; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> minv(cols + 1, kInf);
    std::vector<char> used(cols + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = p[j0];
      double delta = kInf;
      int j1 = 0;
      for (int j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        const double cur =
            cost[static_cast<size_t>(i0 - 1) * cols + (j - 1)] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= cols; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> col_of_row(rows, -1);
  for (int j = 1; j <= cols; ++j) {
    if (p[j] != 0) col_of_row[p[j] - 1] = j - 1;
  }
  return col_of_row;
}

}  // namespace

std::vector<int> LinearSumAssignmentMax(std::span<const double> score, int rows,
                                        int cols) {
  std::vector<int> col_of_row(rows, -1);
  if (rows == 0 || cols == 0) return col_of_row;
  if (rows <= cols) {
    std::vector<double> cost(score.begin(), score.begin() + rows * cols);
    for (double& c : cost) c = -c;
    return MinCostRowsToCols(cost, rows, cols);
  }
  // More rows than columns: assign every column to a row (transpose).
  std::vector<double> cost(static_cast<size_t>(cols) * rows);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c)
      cost[static_cast<size_t>(c) * rows + r] = -score[r * cols + c];
  }
  const std::vector<int> row_of_col = MinCostRowsToCols(cost, cols, rows);
  for (int c = 0; c < cols; ++c) {
    if (row_of_col[c] >= 0) col_of_row[row_of_col[c]] = c;
  }
  return col_of_row;
}

}  // namespace diarization::pipeline
