#include "testing/cuda_test_buffers.h"

#include <cuda_runtime_api.h>

#include "gtest/gtest.h"

namespace diarization::testing {

std::mt19937& Rng() {
  static std::mt19937 rng(std::random_device{}());
  return rng;
}

std::vector<float> Random(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(Rng());
  return v;
}

DeviceFloats::DeviceFloats(const std::vector<float>& host) : n(host.size()) {
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)),
            cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
}

DeviceFloats::DeviceFloats(size_t count) : n(count) {
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)),
            cudaSuccess);
  Poison();
}

DeviceFloats::~DeviceFloats() { cudaFree(p); }

void DeviceFloats::Poison() {
  EXPECT_EQ(cudaMemset(p, 0xff, n * sizeof(float)), cudaSuccess);
}

std::vector<float> DeviceFloats::Host() const {
  std::vector<float> h(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return h;
}

}  // namespace diarization::testing
