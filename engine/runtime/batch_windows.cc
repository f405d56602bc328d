#include "engine/runtime/batch_windows.h"

#include <algorithm>

namespace diarization::runtime::internal {

void BatchWindows::Clear() {
  audio_.clear();
  starts_.clear();
  ends_.clear();
  run_job_ = nullptr;
}

void BatchWindows::Add(const JobState& job, int chunk) {
  const int64_t start = job.options.config.step_samples * int64_t{chunk};
  const int64_t end =
      std::min<int64_t>(start + kWindowSamples, job.num_samples);
  const int64_t base = static_cast<int64_t>(audio_.size());
  if (job.terminal.load() || end <= start || start < job.audio_offset) {
    // Silence: an empty span (the job's audio is gone or never was).
    starts_.push_back(base);
    ends_.push_back(base);
    run_job_ = nullptr;
    return;
  }
  auto copy = [&](int64_t from, int64_t to) {
    const float* src = job.audio.data() + (from - job.audio_offset);
    audio_.insert(audio_.end(), src, src + (to - from));
  };
  const bool extends = run_job_ == &job && start >= run_lo_ &&
                       start <= run_hi_ && run_hi_ >= job.audio_offset;
  if (!extends) {
    run_job_ = &job;
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
