#include "engine/pipeline/segmentation_summary.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/pipeline/speaker_count.h"

namespace diarization::pipeline {

absl::StatusOr<SegmentationSummary> SummarizeSegmentation(
    std::span<const float> segmentations, int num_windows,
    const PipelineConfig& config) {
  constexpr int F = kFramesPerWindow;
  constexpr int S = kLocalSpeakers;
  if (num_windows <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_windows must be > 0, got ", num_windows));
  }
  const size_t want = static_cast<size_t>(num_windows) * F * S;
  if (segmentations.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segmentations have ", segmentations.size(), " values, expected ",
        num_windows, " x ", F, " x ", S, " = ", want));
  }
  if (config.step_samples <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step_samples must be > 0, got ", config.step_samples));
  }
  for (float v : segmentations) {
    if (!(v == 0.0f || v == 1.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segmentations must be 0/1 (hard powerset decode), found ", v));
    }
  }
  SegmentationSummary summary;
  summary.num_windows = num_windows;
  summary.grid = ComputeFrameGrid(
      num_windows, static_cast<double>(config.step_samples) / kSampleRateHz);
  summary.count = SpeakerCount(segmentations, summary.grid);
  summary.inactive = InactiveSpeakers(segmentations, num_windows);
  summary.clean = CleanActivePairs(segmentations, num_windows);
  return summary;
}

absl::Status CheckSummaryShape(const SegmentationSummary& summary,
                               int num_windows) {
  const size_t windows = static_cast<size_t>(std::max(num_windows, 0));
  if (num_windows <= 0 || summary.num_windows != num_windows ||
      summary.grid.window_offset.size() != windows ||
      summary.count.size() != static_cast<size_t>(summary.grid.num_frames) ||
      summary.inactive.size() != windows * kLocalSpeakers) {
    return absl::InvalidArgumentError(
        absl::StrCat("the segmentation summary is of ", summary.num_windows,
                     " windows, the call has ", num_windows));
  }
  return absl::OkStatus();
}

}  // namespace diarization::pipeline
