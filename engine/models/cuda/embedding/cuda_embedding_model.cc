#include "engine/models/cuda/embedding/cuda_embedding_model.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/cuda/cuda_status.h"
#include "engine/models/cuda/embedding/cuda_embedding_impl.h"
#include "kernels/stats_pool.h"

namespace diarization::models {

using cuda::CudaStatus;
using cuda_embedding::kFeat;
using cuda_embedding::kFrames;
using cuda_embedding::kMel;

absl::Status CudaEmbeddingModel::Impl::Enqueue(int n, int s) {
  cudaStream_t stream = ctx->stream();
  RETURN_IF_ERROR(EnqueueFbank(n));
  // Graph API: the trunk runs at max_batch on the graph engines (rows n..
  // zeroed, their outputs never read: convolution, bias and ReLU act per
  // window, and the pooling reads n rows).
  const int tn = graph_api ? options.max_batch : n;
  if (tn > n) {
    const size_t per = size_t{kMel} * kFrames;
    RETURN_IF_ERROR(CudaStatus(
        cudaMemsetAsync(act[0].f32() + size_t(n) * per, 0,
                        sizeof(float) * size_t(tn - n) * per, stream),
        "zeroing the padding windows' features"));
  }
  int h = 0, w = 0;
  float* cur = nullptr;
  {
    void* free_buf = nullptr;
    ASSIGN_OR_RETURN(
        void* out,
        EnqueueTrunkFused(tn, act[0].data(), act[1].data(), act[0].data(),
                          act[2].data(), &h, &w, &free_buf));
    cur = static_cast<float*>(out);
  }
  const bool cl = channels_last;
  // cur: (n, 256, 10, 125) = (n, 2560, 125), or NHWC (n, 10, 125, 256).
  if (int64_t{h} * 256 != kFeat) {
    return absl::InternalError(
        absl::StrCat("ResNet output has ", h, " rows, expected 10"));
  }
  RETURN_IF_ERROR(kernels::LaunchStatsPool({.features = cur,
                                            .masks = masks.f32(),
                                            .stats = stats.f32(),
                                            .batch = n,
                                            .masks_per_item = s,
                                            .feat = kFeat,
                                            .time = w,
                                            .mask_frames = kFramesPerWindow,
                                            .channels_last_rows = cl ? h : 0},
                                           stream));
  return seg1->Forward(stats.f32(), int64_t{n} * s, emb.f32());
}

CudaEmbeddingModel::CudaEmbeddingModel(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
CudaEmbeddingModel::~CudaEmbeddingModel() = default;

std::string CudaEmbeddingModel::precision() const {
  return impl_->options.precision;
}
bool CudaEmbeddingModel::layer1_kernel() const { return impl_->layer1_kernel; }
double CudaEmbeddingModel::device_seconds() const {
  return impl_->busy[0].seconds() + impl_->busy[1].seconds();
}
int CudaEmbeddingModel::graphs() const { return impl_->graphs->size(); }

std::vector<std::string> CudaEmbeddingModel::conv_engines() const {
  return impl_->ConvEngines();
}

absl::Status CudaEmbeddingModel::Run(std::span<const float> windows, int batch,
                                     std::span<const float> masks,
                                     int masks_per_window,
                                     std::span<float> embeddings) {
  if (batch < 0 ||
      windows.size() != static_cast<size_t>(batch) * kWindowSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaEmbeddingModel::Run: batch ", batch, " with ", windows.size(),
        " samples; expected batch × ", kWindowSamples));
  }
  const ContiguousWindowSpans contiguous(windows, 0, batch);
  return RunSpans(contiguous.spans(), masks, masks_per_window, embeddings);
}

namespace {

// RunSpans' and StartSpans' checks of one call's arguments.
absl::Status CheckBatch(const WindowSpans& spans, std::span<const float> masks,
                        int masks_per_window, std::span<float> embeddings,
                        int max_pairs) {
  if (masks_per_window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: masks_per_window ",
                     masks_per_window, " < 1"));
  }
  RETURN_IF_ERROR(ValidateWindowSpans(spans));
  const size_t b = static_cast<size_t>(spans.batch()),
               s = static_cast<size_t>(masks_per_window);
  if (masks.size() != b * s * kFramesPerWindow ||
      embeddings.size() != b * s * kEmbeddingDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: sizes masks ", masks.size(),
                     ", embeddings ", embeddings.size(), " do not match batch ",
                     spans.batch(), " × ", masks_per_window, " masks"));
  }
  if (masks_per_window > max_pairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaEmbeddingModel::Run: ", masks_per_window,
                     " masks per window exceed the ", max_pairs,
                     " pairs the buffers hold; raise max_masks_per_window"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaEmbeddingModel::Impl::EnqueueChunk(
    int slot, const WindowSpans& spans, int first, int n,
    std::span<const float> masks_in, int masks_per_window) {
  const size_t s = static_cast<size_t>(masks_per_window);
  const size_t mask_count = static_cast<size_t>(n) * s * kFramesPerWindow;
  const size_t emb_count = static_cast<size_t>(n) * s * kEmbeddingDim;
  cudaStream_t stream = ctx->stream();
  RETURN_IF_ERROR(busy[slot].Begin(stream));
  RETURN_IF_ERROR(uploader[slot].Upload(spans, first, n, audio, stream));
  RETURN_IF_ERROR(cuda::UploadStaged(
      masks_in.data() + static_cast<size_t>(first) * s * kFramesPerWindow,
      mask_count, host_masks[slot], masks, stream, "masks"));
  RETURN_IF_ERROR(graphs->Run({n, masks_per_window}, options.use_cuda_graphs,
                              [&] { return Enqueue(n, masks_per_window); }));
  RETURN_IF_ERROR(cuda::DownloadAsync(emb, emb_count, host_emb[slot], stream,
                                      "embeddings"));
  return busy[slot].End(stream);
}

absl::Status CudaEmbeddingModel::RunSpans(const WindowSpans& spans,
                                          std::span<const float> masks,
                                          int masks_per_window,
                                          std::span<float> embeddings) {
  Impl& m = *impl_;
  if (!m.started.empty()) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::RunSpans while a started batch is not finished");
  }
  RETURN_IF_ERROR(
      CheckBatch(spans, masks, masks_per_window, embeddings, m.max_pairs));
  const int batch = spans.batch();
  if (batch == 0) return absl::OkStatus();
  RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice"));
  const size_t s = static_cast<size_t>(masks_per_window);
  const int chunk =
      std::min(m.options.max_batch, m.max_pairs / masks_per_window);
  for (int first = 0; first < batch; first += chunk) {
    const int n = std::min(chunk, batch - first);
    RETURN_IF_ERROR(
        m.EnqueueChunk(0, spans, first, n, masks, masks_per_window));
    RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(m.ctx->stream()),
                               "embedding forward"));
    RETURN_IF_ERROR(m.busy[0].Accumulate());
    std::memcpy(
        embeddings.data() + static_cast<size_t>(first) * s * kEmbeddingDim,
        m.host_emb[0].data(),
        static_cast<size_t>(n) * s * kEmbeddingDim * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status CudaEmbeddingModel::StartSpans(const WindowSpans& spans,
                                            std::span<const float> masks,
                                            int masks_per_window,
                                            std::span<float> embeddings) {
  Impl& m = *impl_;
  if (m.started.size() >= Impl::kSlots) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::StartSpans: two batches are started and not "
        "finished; finish one first");
  }
  Impl::Started started{.slot = m.next_slot, .embeddings = embeddings};
  started.status =
      CheckBatch(spans, masks, masks_per_window, embeddings, m.max_pairs);
  const int batch = spans.batch();
  const int chunk =
      masks_per_window >= 1
          ? std::min(m.options.max_batch, m.max_pairs / masks_per_window)
          : 0;
  if (started.status.ok() && batch > chunk) {
    // More than one launch: run it now (slot 0's staging, so only when
    // nothing else is in flight), as RunSpans would.
    started.status = m.started.empty()
                         ? RunSpans(spans, masks, masks_per_window, embeddings)
                         : absl::FailedPreconditionError(absl::StrCat(
                               "CudaEmbeddingModel::StartSpans: a batch of ",
                               batch, " windows (more than one launch of ",
                               chunk, ") while another is started"));
    started.embeddings = {};  // already written
  } else if (started.status.ok() && batch > 0) {
    started.status =
        CudaStatus(cudaSetDevice(m.arena->device()), "cudaSetDevice");
    if (started.status.ok()) {
      started.status = m.EnqueueChunk(started.slot, spans, 0, batch, masks,
                                      masks_per_window);
    }
    if (started.status.ok()) m.next_slot = (m.next_slot + 1) % Impl::kSlots;
  } else {
    started.embeddings = {};  // nothing to write
  }
  m.started.push_back(std::move(started));
  return absl::OkStatus();
}

absl::Status CudaEmbeddingModel::FinishSpans() {
  Impl& m = *impl_;
  if (m.started.empty()) {
    return absl::FailedPreconditionError(
        "CudaEmbeddingModel::FinishSpans: no batch is started");
  }
  Impl::Started started = std::move(m.started.front());
  m.started.pop_front();
  RETURN_IF_ERROR(started.status);
  if (started.embeddings.empty()) return absl::OkStatus();
  // Only this batch: the next one may be running behind it.
  RETURN_IF_ERROR(m.busy[started.slot].Wait());
  RETURN_IF_ERROR(m.busy[started.slot].Accumulate());
  std::memcpy(started.embeddings.data(), m.host_emb[started.slot].data(),
              started.embeddings.size() * sizeof(float));
  return absl::OkStatus();
}

bool CudaEmbeddingModel::pipelined() const { return true; }

}  // namespace diarization::models
