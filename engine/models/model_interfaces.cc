#include "engine/models/model_interfaces.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace diarization::models {

absl::Status ValidateWindowSpans(const WindowSpans& spans) {
  if (spans.starts.size() != spans.ends.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("WindowSpans: ", spans.starts.size(), " starts but ",
                     spans.ends.size(), " ends"));
  }
  const int64_t size = static_cast<int64_t>(spans.audio.size());
  for (size_t i = 0; i < spans.starts.size(); ++i) {
    const int64_t start = spans.starts[i], end = spans.ends[i];
    if (start < 0 || end < start || end > size ||
        end - start > kWindowSamples) {
      return absl::InvalidArgumentError(absl::StrCat(
          "WindowSpans: window ", i, " is [", start, ", ", end, ") of ", size,
          " samples; need 0 <= start <= end <= audio size and "
          "end - start <= ",
          kWindowSamples));
    }
  }
  return absl::OkStatus();
}

std::vector<float> MaterializeWindows(const WindowSpans& spans) {
  std::vector<float> windows(spans.starts.size() * size_t{kWindowSamples},
                             0.0f);
  for (size_t i = 0; i < spans.starts.size(); ++i) {
    std::copy(spans.audio.begin() + spans.starts[i],
              spans.audio.begin() + spans.ends[i],
              windows.begin() + i * size_t{kWindowSamples});
  }
  return windows;
}

ContiguousWindowSpans::ContiguousWindowSpans(std::span<const float> windows,
                                             int first, int count)
    : windows_(windows), starts_(count), ends_(count) {
  for (int i = 0; i < count; ++i) {
    starts_[i] = int64_t{first + i} * kWindowSamples;
    ends_[i] = starts_[i] + kWindowSamples;
  }
}

absl::Status SegmentationModel::RunSpans(const WindowSpans& spans,
                                         std::span<float> log_probs) {
  if (absl::Status s = ValidateWindowSpans(spans); !s.ok()) return s;
  return Run(MaterializeWindows(spans), spans.batch(), log_probs);
}

absl::Status EmbeddingModel::RunSpans(const WindowSpans& spans,
                                      std::span<const float> masks,
                                      int masks_per_window,
                                      std::span<float> embeddings) {
  if (absl::Status s = ValidateWindowSpans(spans); !s.ok()) return s;
  return Run(MaterializeWindows(spans), spans.batch(), masks, masks_per_window,
             embeddings);
}

absl::Status EmbeddingModel::StartSpans(const WindowSpans& spans,
                                        std::span<const float> masks,
                                        int masks_per_window,
                                        std::span<float> embeddings) {
  if (started_.size() >= 2) {
    return absl::FailedPreconditionError(
        "EmbeddingModel::StartSpans: two batches are started and not "
        "finished; finish one first");
  }
  started_.push_back(RunSpans(spans, masks, masks_per_window, embeddings));
  return absl::OkStatus();
}

absl::Status EmbeddingModel::FinishSpans() {
  if (started_.empty()) {
    return absl::FailedPreconditionError(
        "EmbeddingModel::FinishSpans: no batch is started");
  }
  absl::Status s = std::move(started_.front());
  started_.pop_front();
  return s;
}

}  // namespace diarization::models
