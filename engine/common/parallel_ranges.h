// Splitting a loop over [0, n) into consecutive ranges run on threads of
// their own: for the host pipeline's passes whose entries are computed
// alone (each output written by one range, in the one-thread order), so the
// split does not change a bit. std::thread per call rather than a pool: the
// passes run once per clustering (milliseconds each), and the server, where
// many clusterings run at once, asks for one thread (openblas_threads.h).
#ifndef DIARIZATION_ENGINE_COMMON_PARALLEL_RANGES_H_
#define DIARIZATION_ENGINE_COMMON_PARALLEL_RANGES_H_

#include <functional>
#include <span>
#include <vector>

namespace diarization {

// body(bounds[t], bounds[t + 1]) for every t, range 0 on the calling thread
// and the others on threads started and joined here. `bounds` ascending,
// at least two entries (else nothing runs).
void RunRanges(std::span<const int> bounds,
               const std::function<void(int, int)>& body);

// [0, n) as at most `threads` ranges of about equal length and at least
// `min_per_range` entries each (one range for small n), then RunRanges.
void ForEvenRanges(int n, int threads, int min_per_range,
                   const std::function<void(int, int)>& body);

// The rows [0, n) of an n × n matrix's upper triangle (row i holds
// n − 1 − i entries) as at most min(threads, n / min_rows_per_range)
// consecutive ranges of about equal area (one range for small n), then
// RunRanges.
void ForUpperTriangleRows(int n, int threads, int min_rows_per_range,
                          const std::function<void(int, int)>& body);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_PARALLEL_RANGES_H_
