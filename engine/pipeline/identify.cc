#include "engine/pipeline/identify.h"

#include <cmath>
#include <cstddef>

#include "engine/pipeline/linear_sum_assignment.h"

namespace diarization::pipeline {

std::optional<double> CosineSimilarity(std::span<const float> a,
                                       std::span<const float> b) {
  if (a.size() != b.size() || a.empty()) return std::nullopt;
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0.0 || bb == 0.0) return std::nullopt;
  return dot / (std::sqrt(aa) * std::sqrt(bb));
}

std::vector<SpeakerIdentity> IdentifySpeakers(
    const std::vector<std::vector<float>>& centroids,
    std::span<const KnownSpeaker> known, double threshold) {
  const int rows = static_cast<int>(centroids.size());
  const int cols = static_cast<int>(known.size());
  std::vector<SpeakerIdentity> out(rows);
  if (rows == 0 || cols == 0) return out;
  // The assignment's weights: the margin above the threshold, 0 for a pair
  // that may not match (below it, or not scorable). Maximizing their sum
  // prefers confident matches; zero-weight pairs are dropped afterwards.
  std::vector<double> weight(static_cast<size_t>(rows) * cols, 0.0);
  std::vector<char> allowed(weight.size(), 0);
  // Norms once per vector, not once per pair (as CosineSimilarity would).
  auto norm = [](std::span<const float> v) {
    double n = 0.0;
    for (const float x : v) n += static_cast<double>(x) * x;
    return std::sqrt(n);
  };
  std::vector<double> known_norm(cols);
  for (int c = 0; c < cols; ++c) known_norm[c] = norm(known[c].embedding);
  for (int r = 0; r < rows; ++r) {
    const std::vector<float>& a = centroids[r];
    const double a_norm = norm(a);
    for (int c = 0; c < cols; ++c) {
      const std::vector<float>& b = known[c].embedding;
      if (a.size() != b.size() || a_norm == 0.0 || known_norm[c] == 0.0) {
        continue;
      }
      double dot = 0.0;
      for (size_t i = 0; i < a.size(); ++i) {
        dot += static_cast<double>(a[i]) * b[i];
      }
      const std::optional<double> s = dot / (a_norm * known_norm[c]);
      if (out[r].best_label.empty() || *s > out[r].best_score) {
        out[r].best_label = known[c].label;
        out[r].best_score = *s;
      }
      if (*s >= threshold) {
        weight[static_cast<size_t>(r) * cols + c] = *s - threshold;
        allowed[static_cast<size_t>(r) * cols + c] = 1;
      }
    }
  }
  const std::vector<int> col_of_row =
      LinearSumAssignmentMax(weight, rows, cols);
  for (int r = 0; r < rows; ++r) {
    const int c = col_of_row[r];
    if (c >= 0 && allowed[static_cast<size_t>(r) * cols + c]) {
      out[r].matched_label = known[c].label;
    }
  }
  return out;
}

}  // namespace diarization::pipeline
