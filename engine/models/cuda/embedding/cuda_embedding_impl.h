// The insides of CudaEmbeddingModel (cuda_embedding_model.h), shared by its
// source files and private to its target: the trunk's layer types, the
// network's sizes and CudaEmbeddingModel::Impl. The model is split by stage:
//   cuda_embedding_model.cc   the calls (Run, RunSpans, StartSpans,
//                             FinishSpans) and one batch's forward pass
//   cuda_embedding_fbank.cc   the fbank on the device (and ComputeFbank)
//   cuda_embedding_trunk.cc   the ResNet trunk, its cuDNN graph
//                             convolutions and their engine cache
//   cuda_embedding_create.cc  Create: options, weights, buffers
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_IMPL_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_IMPL_H_

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/models/cuda/cuda_buffers.h"
#include "engine/models/cuda/cuda_busy_timer.h"
#include "engine/models/cuda/cuda_context.h"
#include "engine/models/cuda/cuda_graph_cache.h"
#include "engine/models/cuda/cuda_linear.h"
#include "engine/models/cuda/cuda_precision.h"
#include "engine/models/cuda/cuda_window_upload.h"
#include "engine/models/cuda/embedding/conv_engine_cache.h"
#include "engine/models/cuda/embedding/cuda_conv2d.h"
#include "engine/models/cuda/embedding/cuda_embedding_model.h"
#include "engine/models/cuda/embedding/cuda_fft.h"
#include "engine/models/cuda/embedding/cudnn_graph_conv.h"
#include "engine/models/fbank.h"
#include "engine/models/format/model_specs.h"
#include "kernels/conv3x3_c32.h"
#include "kernels/fbank.h"

namespace diarization::models {
namespace cuda_embedding {

using cuda::Conv2d;
using cuda::DeviceBuffer;

using HP = ResNet34HyperParameters;
inline constexpr int kMel = kFbankMelBins;                   // 80
inline constexpr int kFrames = FbankFrames(kWindowSamples);  // 998
inline constexpr int kStem = HP::kBaseChannels;
inline constexpr int kFeat = HP::kStatsDim / 2;  // 256 channels × 10 rows
inline constexpr int kStats = HP::kStatsDim;
inline constexpr float kBnEps = HP::kBatchNormEps;
// The kernels' compile-time sizes (kernels/ does not include the shapes).
static_assert(kernels::kFbankMel == kFbankMelBins);
static_assert(kernels::kFbankFrameLength == kFbankWindowSamples);
static_assert(kernels::kFbankFrameShift == kFbankShiftSamples);
static_assert(kernels::kFbankBins == kFbankFftSize / 2 + 1);

// A conv followed by eval BatchNorm: the scale folded into the convolution
// weights at load (w'[k] = w[k]·scale[k]) and the shift applied as the
// convolution's bias inside the cuDNN kernel, so no pass over the
// activations remains. Folding moves each product by one
// float rounding of w·scale (the TF32 mode rounds the weights either way).
struct ConvBn {
  std::unique_ptr<Conv2d> conv;
  // conv_api "graph": the same layer (and weights) through a
  // cuDNN graph; null on the legacy path.
  std::unique_ptr<cuda::GraphConv2d> graph;
  DeviceBuffer shift;  // the convolution's bias
  std::vector<float> host_shift;
  // CudaModelOptions::layer1_conv_kernel: the folded weights packed for
  // kernels/conv3x3_c32.h; empty for every other layer (and then `graph`
  // or `conv` runs it). Such a layer gets no graph.
  DeviceBuffer c32_weights;
  kernels::Conv3x3C32Tile c32_tile = kernels::kConv3x3C32DefaultTile;
};

struct Block {
  ConvBn conv1, conv2;
  std::optional<ConvBn> shortcut;
  // With a shortcut: conv2's bias plus the shortcut's (the residual
  // add is linear, so the 1×1 shortcut convolution runs without a bias).
  DeviceBuffer conv2_bias_with_shortcut;
};

}  // namespace cuda_embedding

struct CudaEmbeddingModel::Impl {
  CudaModelOptions options;
  CudaHarnessOptions harness;
  cuda::Precision precision = cuda::Precision::kFp32;
  // NHWC activations: only with TF32, where cuDNN's tensor-core kernels
  // want them; its FMA-only FP32 kernels ran 2x slower in NHWC than in NCHW
  // on the H200 (docs/benchmarks.md).
  bool channels_last = false;
  // CudaModelOptions::conv_api resolved to "graph".
  //
  // Graph API: the engines are chosen and built for max_batch windows only,
  // at load, and every call runs the trunk at max_batch on them (the rows
  // past its windows zeroed). So no request pays a plan build (cuDNN
  // compiles the conv2 layers' engines at run time: 0.2-1.1 s per layer and
  // batch size, docs/benchmarks.md 16:27), and the layers' legacy calls
  // never run between graph plans. Configurations that did (small batches
  // on the legacy call), or that shared one plan between layers or timed
  // 24 candidates, gave wrong embeddings on some loads on the H200
  // (2026-12-01, 0.02-0.4 relative); cause not isolated (ADR 0077).
  bool graph_api = false;
  // CudaModelOptions::layer1_conv_kernel, where the trunk allows it (TF32).
  bool layer1_kernel = false;
  kernels::Conv3x3C32Tile layer1_tile = kernels::kConv3x3C32DefaultTile;
  // CudaModelOptions::conv_engine_cache, shared with the process's other
  // pipelines; null without one.
  std::shared_ptr<ConvEngineCache> engine_cache;
  // Declared first: destroyed last, after every buffer went back to it.
  std::shared_ptr<DeviceArena> arena_owner;
  DeviceArena* arena = nullptr;
  std::unique_ptr<cuda::CudaContext> ctx;
  std::unique_ptr<cuda::GraphCache> graphs;

  // Weights.
  cuda::DeviceBuffer window, mel_banks;
  // The fbank's float64 DFT of every frame (512 points, 998 frames a window).
  std::unique_ptr<cuda::RealFftPlans> fft;
  cuda_embedding::ConvBn stem;
  std::vector<cuda_embedding::Block> blocks;
  std::unique_ptr<cuda::Linear> seg1;

  // Buffers for max_batch windows / max_batch × max_masks pairs.
  int max_pairs = 0;
  // Three activation buffers: the fbank's stages and the ResNet's rotating
  // (input, conv output, scratch) triple reuse them.
  cuda::DeviceBuffer audio, masks, act[3], stats, emb;
  // Two sets of the per-batch host staging, timers and uploaders, one per
  // batch in flight (StartSpans/FinishSpans: the next batch is staged while
  // the device runs the current one, and its audio crosses on the slot's
  // uploader's copy stream meanwhile). The other device buffers are shared:
  // the stream runs the batches one after the other.
  static constexpr int kSlots = 2;
  cuda::WindowUploader uploader[kSlots];
  cuda::BusyTimer busy[kSlots];
  cuda::PinnedBuffer host_masks[kSlots], host_emb[kSlots];
  // Batches started and not finished, oldest first.
  struct Started {
    int slot = 0;
    std::span<float> embeddings;
    absl::Status status;  // an error while enqueueing it
  };
  std::deque<Started> started;
  int next_slot = 0;

  // Enqueues windows [first, first + n) of `spans` on the stream with slot
  // `slot`'s staging; their embeddings land in host_emb[slot].
  absl::Status EnqueueChunk(int slot, const WindowSpans& spans, int first,
                            int n, std::span<const float> masks,
                            int masks_per_window);

  ~Impl() {
    if (ctx) cudaStreamSynchronize(ctx->stream());
    graphs.reset();
  }

  absl::Status EnqueueFbank(int n);
  // conv_api "graph": a GraphConv2d over every trunk layer.
  absl::Status AttachGraphConvs();
  // options.conv_engine_cache: opens the process's cache for that file and
  // reports what it holds for this GPU; without a usable file (unreadable,
  // no device properties) the engines are chosen anew, never a failure.
  void OpenEngineCache();
  // Writes the cache when a choice was added; a failure is a diagnostic.
  void SaveEngineCache();
  // conv_api "graph": one eager trunk pass at max_batch on
  // zeroed buffers, so every layer's engine is chosen at load (no request
  // pays it). Called by Create right after it zeroed the activations.
  absl::Status ChooseGraphEnginesAtLoad();
  // One stderr line: how many convolutions run on graph engines.
  void LogGraphConvs();
  std::vector<cuda_embedding::ConvBn*> Layers(std::vector<std::string>* names);
  std::vector<std::string> ConvEngines();
  absl::Status Enqueue(int n, int s);
  // input: the (n, 80, 998, 1) features, which may be a or b; cur, a, b: three
  // distinct activation buffers. On return *free_buf is a buffer not holding
  // the output. Under the graph API n must be max_batch (the engines are built
  // for it).
  absl::StatusOr<void*> EnqueueTrunkFused(int n, const void* input, void* cur,
                                          void* a, void* b, int* out_h,
                                          int* out_w, void** free_buf);
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CUDA_EMBEDDING_IMPL_H_
