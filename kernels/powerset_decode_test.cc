// GPU test: the kernel against a host argmax on fresh random log-probs.
#include "kernels/powerset_decode.h"

#include <cuda_runtime.h>

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

TEST(PowersetDecodeTest, MatchesHostArgmaxIncludingTies) {
  std::random_device rd;
  std::mt19937 rng(rd());
  std::normal_distribution<float> normal;
  const int64_t frames = 589 * 37 + 5;
  std::vector<float> logp(frames * kPowersetClasses);
  for (auto& v : logp) v = normal(rng);
  // Exact ties on some frames: the first index must win.
  for (int64_t f = 0; f < frames; f += 97) {
    logp[f * 7 + 5] = logp[f * 7 + 2] = 100.0f;
  }
  const int mapping[7][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1},
                             {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};
  float* d_in = nullptr;
  float* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, logp.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, frames * 3 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, logp.data(), logp.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(d_out, 0xFF, frames * 3 * sizeof(float)), cudaSuccess);
  ASSERT_TRUE(LaunchPowersetDecode({d_in, d_out, frames}, nullptr).ok());
  std::vector<float> out(frames * 3);
  ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int64_t f = 0; f < frames; ++f) {
    int best = 0;
    for (int c = 1; c < 7; ++c) {
      if (logp[f * 7 + c] > logp[f * 7 + best]) best = c;
    }
    for (int s = 0; s < 3; ++s) {
      ASSERT_EQ(out[f * 3 + s], static_cast<float>(mapping[best][s]))
          << "frame " << f;
    }
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

}  // namespace
}  // namespace diarization::kernels
