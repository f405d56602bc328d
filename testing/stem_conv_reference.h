// The embedding stem (3×3 convolution from one input channel to 32,
// padding 1, bias, ReLU; channels-last output) in float64, the reference of
// the direct stem kernel's tests (kernels/stem_conv.h states the
// arithmetic), with a test case's fresh random inputs and the check of a
// result against it.
#ifndef DIARIZATION_TESTING_STEM_CONV_REFERENCE_H_
#define DIARIZATION_TESTING_STEM_CONV_REFERENCE_H_

#include <random>
#include <span>
#include <vector>

namespace diarization::testing {

// x: (n, h, w); weights: (32, 3, 3); bias: (32). (n, h, w, 32) as doubles.
std::vector<double> StemConvReference(std::span<const float> x,
                                      std::span<const float> weights,
                                      std::span<const float> bias, int n, int h,
                                      int w);

struct StemConvCase {
  int n = 0, h = 0, w = 0;
  std::vector<float> x, weights, bias;  // x normal, weights 0.5 · normal,
                                        // bias 0.3 · normal
  std::vector<double> want;
};
StemConvCase MakeStemConvCase(int n, int h, int w, std::mt19937& rng);

// gtest failures unless every output is written (finite) and within 1e-5 ·
// (1 + |want|) (nine float products and sums), and, for 64 outputs or more,
// some but not all were cut by the ReLU; the largest absolute error.
double ExpectStemConvMatches(std::span<const float> got, const StemConvCase& c);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_STEM_CONV_REFERENCE_H_
