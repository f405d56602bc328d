// Times LaunchConv3x3C32Tf32 (kernels/conv3x3_c32.h) for every tile shape on
// the embedding trunk's layer1 shape (32 windows × 80 × 998 × 32 channels),
// as conv1 (bias + ReLU) and as conv2 (bias + residual + ReLU), with CUDA
// events around each launch; prints the median, min and max over the
// repetitions, TFLOP/s and the bytes moved per second (each tensor read or
// written once). cuDNN's time for the same layers is in the same call's
// rtfx_main log ("graph conv" lines, timed at load).
//
//   [CONV3X3_C32_TILES=name,...] conv3x3_c32_bench [--n=32] [--h=80]
//     [--w=998] [--repeats=30]
//
// Three input sets rotate, each larger than the L2, so that no launch reads
// the previous one's data from the cache.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv3x3_c32.h"
#include "kernels/conv3x3_c32_tiles_env.h"

namespace {

using diarization::kernels::Conv3x3C32Tile;

#define CHECK_CUDA(expr)                                                 \
  do {                                                                   \
    const cudaError_t err_ = (expr);                                     \
    if (err_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(err_)); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

int Flag(int argc, char** argv, const char* name, int def) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::atoi(argv[i] + prefix.size());
    }
  }
  return def;
}

float* Upload(const std::vector<float>& h) {
  float* d = nullptr;
  CHECK_CUDA(
      cudaMalloc(reinterpret_cast<void**>(&d), h.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = Flag(argc, argv, "n", 32);
  const int h = Flag(argc, argv, "h", 80);
  const int w = Flag(argc, argv, "w", 998);
  const int repeats = Flag(argc, argv, "repeats", 30);
  constexpr int kC = diarization::kernels::kConv3x3C32Channels;
  constexpr int kSets = 3;
  const size_t total = size_t(n) * h * w * kC;

  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> host(total), wts(kC * kC * 9), bias(kC);
  for (float& v : wts) v = 0.08f * gauss(rng);
  for (float& v : bias) v = 0.3f * gauss(rng);
  float* d_b = Upload(bias);
  float *x[kSets], *r[kSets], *y[kSets];
  for (int s = 0; s < kSets; ++s) {
    for (float& v : host) v = std::max(0.0f, gauss(rng));
    x[s] = Upload(host);
    for (float& v : host) v = std::max(0.0f, gauss(rng));
    r[s] = Upload(host);
    CHECK_CUDA(
        cudaMalloc(reinterpret_cast<void**>(&y[s]), total * sizeof(float)));
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, n %d, %d x %d x %d channels, %d repeats\n", prop.name,
              n, h, w, kC, repeats);

  const double flop = 2.0 * total * kC * 9;
  // Every form, or those named in CONV3X3_C32_TILES (one process per form:
  // a faulting form cannot stop the others).
  const absl::StatusOr<std::vector<Conv3x3C32Tile>> tiles =
      diarization::kernels::Conv3x3C32TilesFromEnv();
  if (!tiles.ok()) {
    std::fprintf(stderr, "%s\n", tiles.status().ToString().c_str());
    return 1;
  }
  std::printf("%-34s %-9s %9s %9s %9s %9s %9s\n", "tile", "layer", "median_ms",
              "min_ms", "max_ms", "TFLOP/s", "GB/s");
  for (const Conv3x3C32Tile tile : *tiles) {
    // Each tile form has its own filter order.
    auto packed = diarization::kernels::PackConv3x3C32Weights(wts, tile);
    if (!packed.ok()) {
      std::fprintf(stderr, "%s\n", packed.status().ToString().c_str());
      return 1;
    }
    float* d_w = Upload(*packed);
    for (const bool with_residual : {false, true}) {
      std::vector<float> ms;
      for (int i = -3; i < repeats; ++i) {
        const int s = (i + 3) % kSets;
        CHECK_CUDA(cudaEventRecord(start, stream));
        const absl::Status st = diarization::kernels::LaunchConv3x3C32Tf32(
            {.x = x[s],
             .packed_weights = d_w,
             .bias = d_b,
             .residual = with_residual ? r[s] : nullptr,
             .y = y[s],
             .n = n,
             .h = h,
             .w = w,
             .tile = tile},
            stream);
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          return 1;
        }
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float t = 0;
        CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
        if (i >= 0) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
      const double bytes = sizeof(float) * total * (with_residual ? 3.0 : 2.0);
      std::printf("%-34s %-9s %9.4f %9.4f %9.4f %9.1f %9.0f\n",
                  diarization::kernels::Conv3x3C32TileName(tile).c_str(),
                  with_residual ? "conv2" : "conv1", med, ms.front(), ms.back(),
                  flop / (med * 1e-3) / 1e12, bytes / (med * 1e-3) / 1e9);
    }
    CHECK_CUDA(cudaFree(d_w));
  }
  return 0;
}
