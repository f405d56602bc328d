#include "testing/sinc_conv_reference.h"

#include <vector>

#include "gtest/gtest.h"

namespace diarization::testing {
namespace {

// By hand: one channel, taps (1, 2, 1), stride 1, eight samples: six
// convolution outputs, two pooled maxima of |.|.
TEST(SincConvReferenceTest, SmallCaseByHand) {
  const std::vector<float> x = {1, -2, 3, 0, 0, -4, 1, 1};
  const std::vector<float> f = {1, 2, 1};
  // conv: 1-4+3=0, -2+6+0=4, 3+0+0=3, 0+0-4=-4, 0-8+1=-7, -4+2+1=-1
  const std::vector<double> got = SincConvAbsPoolReference(x, f, 0, 8, 1, 3, 1);
  EXPECT_EQ(got, (std::vector<double>{4, 7}));
  // The second item of a batch of two.
  std::vector<float> two = x;
  two.insert(two.end(), x.begin(), x.end());
  EXPECT_EQ(SincConvAbsPoolReference(two, f, 1, 8, 1, 3, 1), got);
}

TEST(SincConvReferenceTest, SymmetricHalves) {
  std::vector<float> f = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 channels, 5 taps
  MakeSymmetricHalves(f, 2, 5);
  EXPECT_EQ(f, (std::vector<float>{1, 2, 3, 2, 1, 6, 7, 0, -7, -6}));
}

}  // namespace
}  // namespace diarization::testing
