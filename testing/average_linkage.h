// scipy/fastcluster average linkage (UPGMA), the linkage BUT's VBx recipe
// (but_vbx_recipe.h) initialises VBx with; the service's pipeline uses
// centroid linkage (engine/pipeline/ahc.h) and never this one. Float64, the
// merge rows in scipy's linkage-matrix form (pipeline::Merge).
#ifndef DIARIZATION_TESTING_AVERAGE_LINKAGE_H_
#define DIARIZATION_TESTING_AVERAGE_LINKAGE_H_

#include <vector>

#include "engine/pipeline/ahc.h"

namespace diarization::testing {

// Average linkage via the nearest-neighbour chain, rows sorted by height
// (stable) and relabelled as scipy does. `condensed` (n(n-1)/2 distances,
// pipeline::CondensedIndex order) is overwritten.
std::vector<pipeline::Merge> AverageLinkage(std::vector<double>& condensed,
                                            int n);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_AVERAGE_LINKAGE_H_
