#include "engine/pipeline/linear_sum_assignment.h"

#include <algorithm>
#include <limits>

namespace diarization::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Minimum-cost assignment of every row (rows <= cols) by shortest
// augmenting paths with dual potentials, in the formulation scipy's
// linear_sum_assignment uses (Crouse, "On implementing 2D rectangular
// assignment algorithms", IEEE TAES 2016): one Dijkstra-like search per
// row, the columns scanned from the last to the first, a column at the
// path's lowest reduced cost taken first-found, and among equal costs an
// unassigned one. Where several assignments are optimal (ties, which the
// DER's mapping meets often: durations in whole milliseconds), these rules
// decide which one comes out, so they are scipy's, not just any Hungarian
// method's.
std::vector<int> MinCostRowsToCols(const std::vector<double>& cost, int rows,
                                   int cols) {
  std::vector<double> u(rows, 0.0), v(cols, 0.0);
  std::vector<double> shortest(cols);
  std::vector<int> path(cols, -1), col4row(rows, -1), row4col(cols, -1);
  std::vector<char> in_rows(rows), in_cols(cols);
  std::vector<int> remaining(cols);
  for (int cur = 0; cur < rows; ++cur) {
    // The shortest augmenting path from row `cur` to an unassigned column.
    double min_val = 0.0;
    int left = cols;
    for (int it = 0; it < cols; ++it) remaining[it] = cols - it - 1;
    std::fill(in_rows.begin(), in_rows.end(), 0);
    std::fill(in_cols.begin(), in_cols.end(), 0);
    std::fill(shortest.begin(), shortest.end(), kInf);
    int sink = -1;
    int i = cur;
    while (sink == -1) {
      int index = -1;
      double lowest = kInf;
      in_rows[i] = 1;
      for (int it = 0; it < left; ++it) {
        const int j = remaining[it];
        const double r =
            min_val + cost[static_cast<size_t>(i) * cols + j] - u[i] - v[j];
        if (r < shortest[j]) {
          path[j] = i;
          shortest[j] = r;
        }
        if (shortest[j] < lowest ||
            (shortest[j] == lowest && row4col[j] == -1)) {
          lowest = shortest[j];
          index = it;
        }
      }
      min_val = lowest;
      if (index < 0 || min_val == kInf) return std::vector<int>(rows, -1);
      const int j = remaining[index];
      if (row4col[j] == -1) {
        sink = j;
      } else {
        i = row4col[j];
      }
      in_cols[j] = 1;
      remaining[index] = remaining[--left];
    }
    // Dual updates, then the augmentation along the path.
    u[cur] += min_val;
    for (int r = 0; r < rows; ++r) {
      if (in_rows[r] && r != cur) u[r] += min_val - shortest[col4row[r]];
    }
    for (int c = 0; c < cols; ++c) {
      if (in_cols[c]) v[c] -= min_val - shortest[c];
    }
    int j = sink;
    while (true) {
      const int r = path[j];
      row4col[j] = r;
      const int previous = col4row[r];
      col4row[r] = j;
      j = previous;
      if (r == cur) break;
    }
  }
  return col4row;
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
  // More rows than columns: assign every column to a row (scipy solves the
  // transpose).
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
