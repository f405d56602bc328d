#include "engine/runtime/batch_windows.h"

#include <algorithm>

#include "engine/pipeline/windows.h"

namespace diarization::runtime::internal {

void BatchWindows::Clear() {
  audio_.clear();
  starts_.clear();
  ends_.clear();
  run_id_ = nullptr;
}

void BatchWindows::Add(const JobState& job, int w) {
  Add(Recording{.id = &job,
                .audio = job.audio,
                .offset = job.audio_offset,
                .num_samples = job.num_samples,
                .step_samples = job.options.config.step_samples,
                .gone = job.terminal.load()},
      w);
}

void BatchWindows::Add(const Recording& recording, int w) {
  const pipeline::WindowRange range = pipeline::WindowSampleRange(
      recording.step_samples, recording.num_samples, w);
  const int64_t start = range.begin;
  const int64_t end = range.end;
  const int64_t base = static_cast<int64_t>(audio_.size());
  if (recording.gone || end <= start || start < recording.offset) {
    // Silence: an empty span (the recording's audio is gone or never was).
    starts_.push_back(base);
    ends_.push_back(base);
    run_id_ = nullptr;
    return;
  }
  auto copy = [&](int64_t from, int64_t to) {
    const float* src = recording.audio.data() + (from - recording.offset);
    audio_.insert(audio_.end(), src, src + (to - from));
  };
  const bool extends = run_id_ == recording.id && start >= run_lo_ &&
                       start <= run_hi_ && run_hi_ >= recording.offset;
  if (!extends) {
    run_id_ = recording.id;
    run_lo_ = start;
    run_hi_ = start;
    run_base_ = base;
  }
  if (end > run_hi_) {
    copy(run_hi_, end);
    run_hi_ = end;
  }
  starts_.push_back(run_base_ + (start - run_lo_));
  ends_.push_back(run_base_ + (end - run_lo_));
}

models::WindowSpans BatchWindows::spans() const {
  return models::WindowSpans{.audio = audio_, .starts = starts_, .ends = ends_};
}

}  // namespace diarization::runtime::internal
