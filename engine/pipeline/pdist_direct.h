// scipy's pdist(x, "euclidean") by its own loop: float32 rows promoted to
// float64, per pair the differences squared and summed in order over the
// coordinates, then the square root. The AHC's distances up to 1024 points
// (ahc.h PdistEuclidean), where the Gram form's cancellation would cost
// relative precision on near-duplicate rows.
//
// Why by hand: no BLAS computes this form (a BLAS would take the Gram
// form), and summing each pair's coordinates in order is what makes the
// bits scipy's. The speed comes from doing 16 pairs at once, one per SIMD
// lane, each lane summing its own pair in scipy's order: an x86-64 CPU with
// AVX2 (detected at run time) runs 4 pairs per vector, others the plain
// loop; both give the same bits (no fused multiply-add: this library is
// built with -ffp-contract=off and the AVX2 path does not enable FMA).
#ifndef DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_
#define DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_

#include <span>

namespace diarization::pipeline {

// `out`: n(n−1)/2 entries, condensed (pair (i, j), i < j, at
// n·i − i(i+1)/2 + j − i − 1). `x`: n × d, row-major. n >= 1, d >= 1.
void PdistDirect(std::span<const float> x, int n, int d, std::span<double> out);

// The plain loop alone (the reference of the vector path's tests).
void PdistDirectScalar(std::span<const float> x, int n, int d,
                       std::span<double> out);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_
