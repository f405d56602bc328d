#include "engine/pipeline/kmeans_random_state.h"

#include <algorithm>
#include <vector>

namespace diarization::pipeline {
namespace {
constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) {
  for (int i = 0; i < kN; ++i) {
    key_[i] = seed;
    seed = 1812433253U * (seed ^ (seed >> 30)) + static_cast<uint32_t>(i + 1);
  }
  pos_ = kN;
}

void NumpyRandomState::Generate() {
  // numpy's mt19937_gen.
  int i = 0;
  for (; i < kN - kM; ++i) {
    const uint32_t y = (key_[i] & kUpperMask) | (key_[i + 1] & kLowerMask);
    key_[i] = key_[i + kM] ^ (y >> 1) ^ (-(y & 1) & kMatrixA);
  }
  for (; i < kN - 1; ++i) {
    const uint32_t y = (key_[i] & kUpperMask) | (key_[i + 1] & kLowerMask);
    key_[i] = key_[i + (kM - kN)] ^ (y >> 1) ^ (-(y & 1) & kMatrixA);
  }
  const uint32_t y = (key_[kN - 1] & kUpperMask) | (key_[0] & kLowerMask);
  key_[kN - 1] = key_[kM - 1] ^ (y >> 1) ^ (-(y & 1) & kMatrixA);
  pos_ = 0;
}

uint32_t NumpyRandomState::NextUint32() {
  if (pos_ == kN) Generate();
  uint32_t y = key_[pos_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double NumpyRandomState::RandomSample() {
  const int32_t a = static_cast<int32_t>(NextUint32() >> 5);
  const int32_t b = static_cast<int32_t>(NextUint32() >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

int NumpyRandomState::Choice(std::span<const double> p) {
  std::vector<double> cdf(p.size());
  double acc = 0.0;
  for (size_t i = 0; i < p.size(); ++i) cdf[i] = acc += p[i];
  const double last = cdf.back();
  for (double& c : cdf) c /= last;
  const double u = RandomSample();
  // searchsorted(side="right"): the first index whose cdf exceeds u.
  return static_cast<int>(std::upper_bound(cdf.begin(), cdf.end(), u) -
                          cdf.begin());
}

}  // namespace diarization::pipeline
