// Batched float64 real-to-complex FFTs (cuFFT's D2Z) of one length, on one
// CUDA context's stream: the fbank's DFT of every frame of a batch of
// windows (kernels/fbank.h). cuFFT instead of a hand-written FFT or a DFT
// GEMM: two FFT kernels of ours were slower than the DFT as a DGEMM, which
// itself does 13 GFLOP of float64 per batch of 32 windows where the FFT
// needs a twentieth (docs/benchmarks.md, 2026-12-03).
//
// Contract: plans are made at Create for 1, 2, 4, ... items and for
// max_items (an item = rows_per_item transforms: one window's frames), so
// no call makes a plan (calls may be captured into CUDA graphs). A call of
// n items runs the plan of PlannedItems(n) >= n items: the input and output
// buffers must hold that many items, and the input rows past n must be
// initialised memory (their spectra are computed and never read). The work
// area comes from the arena, shared by the plans (one stream orders them);
// what cuFFT keeps on the device besides is booked as external. Not
// thread-safe: the owning model's caller only.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_FFT_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_FFT_H_

#include <cufft.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_context.h"

namespace diarization::models::cuda {

class RealFftPlans {
 public:
  // in: (items, rows_per_item, length) float64; out: (items, rows_per_item,
  // length / 2 + 1) complex float64, (re, im) interleaved.
  static absl::StatusOr<std::unique_ptr<RealFftPlans>> Create(
      CudaContext* ctx, int length, int rows_per_item, int max_items,
      const std::string& owner);
  ~RealFftPlans();
  RealFftPlans(const RealFftPlans&) = delete;
  RealFftPlans& operator=(const RealFftPlans&) = delete;

  // The items the plan for `items` transforms (1 <= items <= max_items).
  int PlannedItems(int items) const;
  // Enqueues the transforms of `items` items (see the contract above).
  absl::Status Forward(const double* in, int items, double* out);

 private:
  RealFftPlans() = default;
  CudaContext* ctx_ = nullptr;
  int max_items_ = 0;
  std::map<int, cufftHandle> plans_;  // by items
  DeviceBuffer work_;
};

}  // namespace diarization::models::cuda

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_FFT_H_
