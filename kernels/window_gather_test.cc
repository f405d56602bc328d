// LaunchGatherWindows against a host reference on fresh random spans (GPU
// only): overlapping windows of one recording, windows of several
// recordings, the zero-padded last window, and an empty span.
#include "kernels/window_gather.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

template <typename T>
T* ToDevice(const std::vector<T>& h) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), h.size() * sizeof(T)),
            cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice),
      cudaSuccess);
  return p;
}

TEST(GatherWindowsTest, MatchesHostReferenceOnRandomSpans) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const int64_t window = 1000 + rng() % 3000;
    const int64_t step = 1 + rng() % window;
    const int batch = 1 + rng() % 40;
    // Recordings of random lengths; each window picks one and a position,
    // some of them past the end (zero padding), some fully inside.
    std::vector<float> audio(5 * window + rng() % window);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : audio) x = u(rng);
    std::vector<int64_t> starts(batch), ends(batch);
    for (int i = 0; i < batch; ++i) {
      const int64_t rec_end = window + rng() % (audio.size() - window + 1);
      const int64_t start =
          (rng() % 4 == 0)
              ? rec_end - (rng() % window)  // padded tail
              : std::max<int64_t>(0, rec_end - window - step * (rng() % 3));
      starts[i] = start;
      ends[i] = std::min<int64_t>(rec_end, start + window);
    }
    std::vector<float> want(size_t(batch) * window, 0.0f);
    for (int i = 0; i < batch; ++i) {
      for (int64_t j = 0; starts[i] + j < ends[i]; ++j) {
        want[i * window + j] = audio[starts[i] + j];
      }
    }
    float* d_audio = ToDevice(audio);
    int64_t* d_starts = ToDevice(starts);
    int64_t* d_ends = ToDevice(ends);
    float* d_out = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out),
                         want.size() * sizeof(float)),
              cudaSuccess);
    // NaN poison: an unwritten sample fails the comparison.
    ASSERT_EQ(cudaMemset(d_out, 0xff, want.size() * sizeof(float)),
              cudaSuccess);
    ASSERT_TRUE(LaunchGatherWindows({.audio = d_audio,
                                     .audio_samples = int64_t(audio.size()),
                                     .starts = d_starts,
                                     .ends = d_ends,
                                     .windows = d_out,
                                     .batch = batch,
                                     .window_samples = window},
                                    nullptr)
                    .ok());
    std::vector<float> got(want.size());
    ASSERT_EQ(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    // Bit-exact: a copy, no arithmetic.
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)),
              0)
        << "round " << round << " batch " << batch << " window " << window;
    cudaFree(d_audio);
    cudaFree(d_starts);
    cudaFree(d_ends);
    cudaFree(d_out);
  }
}

TEST(GatherWindowsTest, RejectsBadArguments) {
  EXPECT_FALSE(
      LaunchGatherWindows({.batch = 2, .window_samples = 10}, nullptr).ok());
  EXPECT_FALSE(
      LaunchGatherWindows({.batch = 1, .window_samples = 0}, nullptr).ok());
  EXPECT_TRUE(
      LaunchGatherWindows({.batch = 0, .window_samples = 10}, nullptr).ok());
}

}  // namespace
}  // namespace diarization::kernels
