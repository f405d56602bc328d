// pyannote's mask-weighted statistics pooling in float64 (models.md §4), the
// reference of the StatsPool kernel's test and of its qualification
// (kernels/stats_pool.h states the arithmetic).
#ifndef DIARIZATION_TESTING_STATS_POOL_REFERENCE_H_
#define DIARIZATION_TESTING_STATS_POOL_REFERENCE_H_

#include <vector>

namespace diarization::testing {

// x is (batch, feat, time), m is (batch, masks, frames); per (item, mask)
// the row [mean | std] of 2 * feat values.
std::vector<double> StatsPoolReference(const std::vector<float>& x,
                                       const std::vector<float>& m, int batch,
                                       int masks, int feat, int time,
                                       int frames);

// (batch, feat, time) with feature f = channel * rows + row, as channels-last
// (batch, rows, time, channels), the layout of the TF32 trunk's output.
std::vector<float> ToChannelsLast(const std::vector<float>& x, int batch,
                                  int feat, int time, int rows);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_STATS_POOL_REFERENCE_H_
