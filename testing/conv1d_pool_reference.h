// The segmentation's 1-D convolution + max-pool 3 + bias step in float64,
// the reference of the direct kernel's tests (kernels/conv1d_pool.h states
// the arithmetic), with each output's error scale: the absolute sum of the
// products of the pooled convolution output, which bounds a float32 sum's
// rounding.
#ifndef DIARIZATION_TESTING_CONV1D_POOL_REFERENCE_H_
#define DIARIZATION_TESTING_CONV1D_POOL_REFERENCE_H_

#include <random>
#include <span>
#include <vector>

namespace diarization::testing {

struct Conv1dPoolReference {
  std::vector<double> y;      // (batch, out_channels, pooled)
  std::vector<double> scale;  // per output: Σ |w·x| (largest of its three)
};

// x: (batch, in_channels, len); weights: (out_channels, in_channels, taps);
// bias: (out_channels). conv_len = len - taps + 1, pooled = conv_len / 3;
// y[b, o, p] = max over r < 3 of conv[b, o, 3p + r], plus bias[o].
Conv1dPoolReference Conv1dMaxPool3Reference(std::span<const float> x,
                                            std::span<const float> weights,
                                            std::span<const float> bias,
                                            int batch, int in_channels,
                                            int out_channels, int len,
                                            int taps);

// One test case of the kernel: fresh random inputs of a shape (x normal,
// weights normal / sqrt(in_channels · 5), bias 0.3 · normal; weights in
// torch's layout) and their float64 reference, for 60 outputs and 5 taps.
struct Conv1dPoolCase {
  int batch = 0, in_channels = 0, len = 0;
  std::vector<float> x, weights, bias;
  Conv1dPoolReference want;
};
Conv1dPoolCase MakeConv1dPoolCase(int batch, int in_channels, int len,
                                  std::mt19937& rng);

// gtest failures unless every output is written (finite) and within the
// float32 FMA chain's bound of the reference; the largest error relative
// to the terms' absolute sum, for the log.
double ExpectConv1dPoolMatches(std::span<const float> got,
                               const Conv1dPoolCase& c);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_CONV1D_POOL_REFERENCE_H_
