// Fresh random inputs and device buffers for the CUDA kernel tests
// (kernels/*_test.cc). Failures are gtest expectations, so a failed
// allocation or copy fails the test that made it instead of aborting.
#ifndef DIARIZATION_TESTING_CUDA_TEST_BUFFERS_H_
#define DIARIZATION_TESTING_CUDA_TEST_BUFFERS_H_

#include <cstddef>
#include <random>
#include <vector>

namespace diarization::testing {

// One generator per test binary, seeded from std::random_device: every run
// draws fresh inputs.
std::mt19937& Rng();

// `n` floats uniform in [lo, hi).
std::vector<float> Random(size_t n, float lo, float hi);

// A float buffer on the device, freed at scope exit.
struct DeviceFloats {
  float* p = nullptr;
  size_t n = 0;
  // A device copy of `host`.
  explicit DeviceFloats(const std::vector<float>& host);
  // `count` floats, poisoned (see Poison).
  explicit DeviceFloats(size_t count);
  ~DeviceFloats();
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  // NaN everywhere, so an unwritten output fails.
  void Poison();
  // Synchronizes the device and copies the buffer back.
  std::vector<float> Host() const;
};

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_CUDA_TEST_BUFFERS_H_
