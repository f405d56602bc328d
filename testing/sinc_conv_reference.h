// The SincNet filter-bank step (convolution, |.|, max-pool 3) in float64,
// the reference of the SincNet kernel's test and of its qualification
// (kernels/sinc_conv.h states the arithmetic), and the filter symmetry that
// kernel's fast form needs, made on random filters.
#ifndef DIARIZATION_TESTING_SINC_CONV_REFERENCE_H_
#define DIARIZATION_TESTING_SINC_CONV_REFERENCE_H_

#include <span>
#include <vector>

namespace diarization::testing {

// x: (batch, len); filters: (channels, taps). Item `b`'s (channels, pooled)
// outputs, pooled = ((len - taps) / stride + 1) / 3, as doubles.
std::vector<double> SincConvAbsPoolReference(std::span<const float> x,
                                             std::span<const float> filters,
                                             int b, int len, int channels,
                                             int taps, int stride);

// Mirrors each filter's left half onto its right: the first half of the
// channels even (f[taps-1-j] = f[j]), the second half odd (= -f[j], centre
// 0), as SincNet's cosine and sine filters are.
void MakeSymmetricHalves(std::span<float> filters, int channels, int taps);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_SINC_CONV_REFERENCE_H_
