// Reads assignment problems, writes our assignments: the C++ side of
// lsa_scipy_parity_test. Input on stdin, one problem per line: "rows cols"
// and the rows × cols scores (row-major, shortest round-trip decimals).
// Output on stdout, one line per problem: col_of_row of
// LinearSumAssignmentMax (−1 for an unassigned row).
#include <cstdio>
#include <vector>

#include "engine/pipeline/linear_sum_assignment.h"

int main() {
  int rows = 0, cols = 0;
  while (std::scanf("%d %d", &rows, &cols) == 2) {
    if (rows < 0 || cols < 0) return 2;
    std::vector<double> score(static_cast<size_t>(rows) * cols);
    for (double& v : score) {
      if (std::scanf("%lf", &v) != 1) return 2;
    }
    const std::vector<int> col_of_row =
        diarization::pipeline::LinearSumAssignmentMax(score, rows, cols);
    for (size_t r = 0; r < col_of_row.size(); ++r) {
      std::printf(r == 0 ? "%d" : " %d", col_of_row[r]);
    }
    std::printf("\n");
  }
  return 0;
}
