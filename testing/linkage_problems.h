// Random inputs of the clustering's centroid linkage and the bit-for-bit
// comparison of two merge lists, shared by the tests of the GPU linkage
// (engine/models/cuda/linkage/cuda_linkage_test on the device, kernels/
// engine/models/cuda/linkage/centroid_linkage_emulation_test on host
// threads).
#ifndef DIARIZATION_TESTING_LINKAGE_PROBLEMS_H_
#define DIARIZATION_TESTING_LINKAGE_PROBLEMS_H_

#include <random>
#include <string>
#include <vector>

#include "engine/pipeline/ahc.h"

namespace diarization::testing {

enum class LinkageProblemKind { kGaussian, kClustered, kDuplicates, kGrid };
inline constexpr LinkageProblemKind kLinkageProblemKinds[] = {
    LinkageProblemKind::kGaussian, LinkageProblemKind::kClustered,
    LinkageProblemKind::kDuplicates, LinkageProblemKind::kGrid};

// n × d float32 rows of the given kind, L2-normalised as AhcCluster does
// (except the grid, whose exact ties are the point): Gaussian; 2-9
// Gaussian clusters; Gaussian with a fifth of the rows exact copies of
// earlier ones (zero distances, equal heights: the order of ties decides the
// merges); integer points on a 7-value grid.
std::vector<float> LinkageProblem(LinkageProblemKind kind, int n, int d,
                                  std::mt19937_64& rng);

// gtest failures (with `what` and the merge's index) unless both lists have
// the same merges: clusters, sizes and heights to the bit.
void ExpectSameMerges(const std::vector<pipeline::Merge>& got,
                      const std::vector<pipeline::Merge>& want,
                      const std::string& what);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_LINKAGE_PROBLEMS_H_
