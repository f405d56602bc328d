// scipy's pdist(x, "euclidean") by its own loop: float32 rows promoted to
// float64, per pair the differences squared and summed in order over the
// coordinates, then the square root. The AHC's distances for every input it
// clusters exactly (ahc.h: up to AhcOptions::exact_max_n points), on the
// host; the GPU's kernels/euclidean_distances.h gives the same bits.
//
// Why by hand: no BLAS computes this form (a BLAS would take the Gram
// form, whose rounding differs from scipy's and whose cancellation loses
// relative precision on near-duplicate rows), and summing each pair's
// coordinates in order is what makes the bits scipy's. The speed comes from
// many pairs at once, one per SIMD lane, each lane summing its own pair in
// scipy's order: 32 pairs per step on an x86-64 CPU with AVX-512F, 16 with
// AVX2 (detected at run time), the plain loop elsewhere; all give the same
// bits (no fused multiply-add: this library is built with -ffp-contract=off
// and the vector paths do not enable FMA). The rows split over threads;
// each pair is still computed alone, so the split changes no bit either.
#ifndef DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_
#define DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_

#include <span>

namespace diarization::pipeline {

// Which loop PdistDirect* run (tests pin each one).
enum class PdistPath { kBest, kScalar, kAvx2, kAvx512 };

// Whether this CPU runs `path` (kBest and kScalar: always).
bool PdistPathSupported(PdistPath path);

// `out`: n(n−1)/2 entries, condensed (pair (i, j), i < j, at
// n·i − i(i+1)/2 + j − i − 1). `x`: n × d, row-major. n >= 1, d >= 1.
// `threads`: at most this many threads (rows split by area).
void PdistDirect(std::span<const float> x, int n, int d, std::span<double> out,
                 int threads = 1, PdistPath path = PdistPath::kBest);

// The same distances into the upper triangle (i < j) of an n × n row-major
// matrix `out`, with a zero diagonal; the lower triangle is not written.
void PdistDirectSquare(std::span<const float> x, int n, int d,
                       std::span<double> out, int threads = 1,
                       PdistPath path = PdistPath::kBest);

// The plain loop alone (the reference of the vector paths' tests).
void PdistDirectScalar(std::span<const float> x, int n, int d,
                       std::span<double> out);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_PDIST_DIRECT_H_
