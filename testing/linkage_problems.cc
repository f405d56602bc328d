#include "testing/linkage_problems.h"

#include <cstring>

#include "gtest/gtest.h"

namespace diarization::testing {

std::vector<float> LinkageProblem(LinkageProblemKind kind, int n, int d,
                                  std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n) * d);
  if (kind == LinkageProblemKind::kGrid) {
    std::uniform_int_distribution<int> cell(0, 6);
    for (float& v : x) v = static_cast<float>(cell(rng));
    return x;
  }
  if (kind == LinkageProblemKind::kClustered) {
    const int k = 2 + static_cast<int>(rng() % 8);
    std::vector<float> centers(static_cast<size_t>(k) * d);
    for (float& v : centers) v = normal(rng);
    for (int i = 0; i < n; ++i) {
      const int c = static_cast<int>(rng() % k);
      for (int t = 0; t < d; ++t) {
        x[static_cast<size_t>(i) * d + t] =
            centers[static_cast<size_t>(c) * d + t] + 0.6f * normal(rng);
      }
    }
  } else {
    for (float& v : x) v = normal(rng);
  }
  if (kind == LinkageProblemKind::kDuplicates) {
    for (int i = 1; i < n; ++i) {
      if (rng() % 5 == 0) {
        const int j = static_cast<int>(rng() % i);
        std::memcpy(&x[static_cast<size_t>(i) * d],
                    &x[static_cast<size_t>(j) * d], sizeof(float) * d);
      }
    }
  }
  return pipeline::NormalizeRowsF32(x, n, d);
}

void ExpectSameMerges(const std::vector<pipeline::Merge>& got,
                      const std::vector<pipeline::Merge>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].a, want[k].a) << what << " merge " << k;
    ASSERT_EQ(got[k].b, want[k].b) << what << " merge " << k;
    ASSERT_EQ(got[k].size, want[k].size) << what << " merge " << k;
    ASSERT_EQ(std::memcmp(&got[k].distance, &want[k].distance, 8), 0)
        << what << " merge " << k << ": " << got[k].distance << " vs "
        << want[k].distance;
  }
}

}  // namespace diarization::testing
