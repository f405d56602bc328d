#include "engine/eval/hungarian.h"

#include <limits>

namespace diarization::eval {
namespace {

// Minimum-cost assignment of each of n rows to a distinct column of m >= n
// (shortest augmenting paths with potentials, O(n² m)). cost is row-major.
std::vector<int> MinimumCostRowsToColumns(const std::vector<double>& cost,
                                          int n, int m) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // 1-based, index 0 is the virtual start of each augmenting path.
  std::vector<double> u(n + 1, 0.0), v(m + 1, 0.0);
  std::vector<int> column_owner(m + 1, 0), way(m + 1, 0);
  for (int row = 1; row <= n; ++row) {
    column_owner[0] = row;
    int j0 = 0;
    std::vector<double> min_slack(m + 1, kInf);
    std::vector<bool> used(m + 1, false);
    do {
      used[j0] = true;
      const int i0 = column_owner[j0];
      double delta = kInf;
      int j1 = 0;
      for (int j = 1; j <= m; ++j) {
        if (used[j]) continue;
        const double reduced = cost[(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
        if (reduced < min_slack[j]) {
          min_slack[j] = reduced;
          way[j] = j0;
        }
        if (min_slack[j] < delta) {
          delta = min_slack[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= m; ++j) {
        if (used[j]) {
          u[column_owner[j]] += delta;
          v[j] -= delta;
        } else {
          min_slack[j] -= delta;
        }
      }
      j0 = j1;
    } while (column_owner[j0] != 0);
    do {
      const int j1 = way[j0];
      column_owner[j0] = column_owner[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> row_to_column(n, -1);
  for (int j = 1; j <= m; ++j) {
    if (column_owner[j] != 0) row_to_column[column_owner[j] - 1] = j - 1;
  }
  return row_to_column;
}

}  // namespace

std::vector<int> MaximumWeightAssignment(
    const std::vector<std::vector<double>>& weight) {
  const int rows = static_cast<int>(weight.size());
  const int columns = rows == 0 ? 0 : static_cast<int>(weight[0].size());
  if (rows == 0 || columns == 0) return std::vector<int>(rows, -1);
  if (rows <= columns) {
    std::vector<double> cost(rows * columns);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < columns; ++c) cost[r * columns + c] = -weight[r][c];
    }
    return MinimumCostRowsToColumns(cost, rows, columns);
  }
  // More rows than columns: assign columns to rows instead.
  std::vector<double> cost(columns * rows);
  for (int c = 0; c < columns; ++c) {
    for (int r = 0; r < rows; ++r) cost[c * rows + r] = -weight[r][c];
  }
  const std::vector<int> column_to_row =
      MinimumCostRowsToColumns(cost, columns, rows);
  std::vector<int> row_to_column(rows, -1);
  for (int c = 0; c < columns; ++c) {
    if (column_to_row[c] >= 0) row_to_column[column_to_row[c]] = c;
  }
  return row_to_column;
}

}  // namespace diarization::eval
