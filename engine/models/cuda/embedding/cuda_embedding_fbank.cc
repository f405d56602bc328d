// CudaEmbeddingModel's fbank on the device: frames, float64 FFT, power,
// mel product and log-normalisation (cuda_embedding_impl.h lists the files).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/embedding/cuda_embedding_impl.h"
#include "kernels/fbank.h"

namespace diarization::models {

using cuda::CublasStatus;
using cuda::CudaStatus;
using cuda_embedding::kFrames;
using cuda_embedding::kMel;

absl::Status CudaEmbeddingModel::Impl::EnqueueFbank(int n) {
  cudaStream_t stream = ctx->stream();
  const int64_t rows = int64_t{n} * kFrames;
  // Fbank. Buffer roles: act[2] frames (f64), act[1] spectrum (f64),
  // act[2] power (frames are dead), act[1] mel (the spectrum is dead),
  // act[0] features (n, 1, 80, 998), which is also NHWC with one channel.
  double* frames = act[2].f64();
  double* spectrum = act[1].f64();
  float* power = act[2].f32();
  float* mel = act[1].f32();
  float* feats = act[0].f32();
  RETURN_IF_ERROR(
      kernels::LaunchFbankFrames({.audio = audio.f32(),
                                  .window = window.f32(),
                                  .frames = frames,
                                  .batch = n,
                                  .samples_per_item = kWindowSamples,
                                  .frames_per_item = kFrames},
                                 stream));
  // Runs on fft->PlannedItems(n) >= n windows' frames: the rows past n hold
  // initialised data (the buffers are zeroed at load) and are never read.
  RETURN_IF_ERROR(fft->Forward(frames, n, spectrum));
  RETURN_IF_ERROR(kernels::LaunchFbankPower(spectrum, power, rows, stream));
  {
    // The mel product stays FP32 in every precision mode (the CPU does it in
    // float32; TF32 here would move quiet mel bands by ~1e-3).
    RETURN_IF_ERROR(
        CublasStatus(cublasSetMathMode(ctx->cublas(), CUBLAS_PEDANTIC_MATH),
                     "cublasSetMathMode"));
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_ERROR(
        CublasStatus(cublasSgemm(ctx->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, kMel,
                                 static_cast<int>(rows), kernels::kFbankBins,
                                 &one, mel_banks.f32(), kernels::kFbankBins,
                                 power, kernels::kFbankBins, &zero, mel, kMel),
                     "cublasSgemm (fbank mel)"));
    RETURN_IF_ERROR(CublasStatus(
        cublasSetMathMode(ctx->cublas(), precision == cuda::Precision::kFp32
                                             ? CUBLAS_PEDANTIC_MATH
                                             : CUBLAS_TF32_TENSOR_OP_MATH),
        "cublasSetMathMode"));
  }
  return kernels::LaunchFbankLogNormalize(mel, feats, n, kFrames, stream);
}

absl::Status CudaEmbeddingModel::ComputeFbank(std::span<const float> windows,
                                              int batch,
                                              std::span<float> fbank) {
  Impl& m = *impl_;
  const size_t per = size_t{kFrames} * kMel;
  if (batch < 0 ||
      windows.size() != static_cast<size_t>(batch) * kWindowSamples ||
      fbank.size() != static_cast<size_t>(batch) * per) {
    return absl::InvalidArgumentError(
        "CudaEmbeddingModel::ComputeFbank: size mismatch");
  }
  RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice"));
  cudaStream_t stream = m.ctx->stream();
  std::vector<float> host(per * m.options.max_batch);
  for (int first = 0; first < batch; first += m.options.max_batch) {
    const int n = std::min(m.options.max_batch, batch - first);
    const ContiguousWindowSpans contiguous(windows, first, n);
    RETURN_IF_ERROR(
        m.uploader[0].Upload(contiguous.spans(), 0, n, m.audio, stream));
    RETURN_IF_ERROR(m.EnqueueFbank(n));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(host.data(), m.act[0].data(), sizeof(float) * n * per,
                        cudaMemcpyDeviceToHost, stream),
        "copying fbank from the device"));
    RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "fbank"));
    // Device layout (item, mel, frame) -> (item, frame, mel).
    for (int b = 0; b < n; ++b)
      for (int mel = 0; mel < kMel; ++mel)
        for (int f = 0; f < kFrames; ++f)
          fbank[(size_t{static_cast<size_t>(first + b)} * kFrames + f) * kMel +
                mel] =
              host[(size_t{static_cast<size_t>(b)} * kMel + mel) * kFrames + f];
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
