#include "engine/runtime/batch_windows.h"

#include <algorithm>
#include <utility>

#include "engine/pipeline/windows.h"

namespace diarization::runtime::internal {

void BatchWindows::UseBuffer(std::shared_ptr<float[]> buffer, size_t floats) {
  buffer_ = std::move(buffer);
  buffer_floats_ = buffer_ ? floats : 0;
  Clear();
}

absl::Status BatchWindows::UsePinnedBuffer(
    const std::function<absl::StatusOr<std::shared_ptr<float[]>>(size_t)>&
        pinned_host_floats,
    int max_batch) {
  if (!pinned_host_floats) return absl::OkStatus();
  // A batch of n windows gathers at most n × kWindowSamples samples.
  const size_t floats = static_cast<size_t>(std::max(max_batch, 1)) *
                        static_cast<size_t>(kWindowSamples);
  absl::StatusOr<std::shared_ptr<float[]>> buffer = pinned_host_floats(floats);
  if (!buffer.ok()) return buffer.status();
  UseBuffer(*std::move(buffer), floats);
  return absl::OkStatus();
}

void BatchWindows::Clear() {
  own_.clear();
  spilled_ = false;
  size_ = 0;
  starts_.clear();
  ends_.clear();
  run_id_ = nullptr;
}

BatchWindows::Recording BatchWindows::RecordingOf(const JobState& job) {
  return Recording{.id = &job,
                   .job = &job,
                   .offset = job.audio_offset_locked(),
                   .num_samples = job.num_samples_locked(),
                   .step_samples = job.options().config.step_samples,
                   .gone = job.terminal(),
                   .crop_edges = &job.crop_edges_locked()};
}

void BatchWindows::Add(const JobState& job, int w) { Add(RecordingOf(job), w); }

void BatchWindows::AddCrop(const JobState& job, int w) {
  AddCrop(RecordingOf(job), w);
}

void BatchWindows::AddCrop(const Recording& recording, int w) {
  const pipeline::WindowRange range = pipeline::WindowSampleRange(
      recording.step_samples, recording.num_samples, w);
  if (recording.crop_edges == nullptr || recording.crop_edges->empty() ||
      recording.gone || range.end <= range.begin ||
      range.begin < recording.offset || range.begin % kSampleRateHz != 0) {
    // No edges (16 kHz audio), or silence, or a window that does not start
    // on a whole second (pyannote's crops all do): as any window.
    Add(recording, w);
    return;
  }
  // The whole window: its samples, zeros past the audio, then the edges.
  const int64_t base = size_;
  const int64_t available = std::min(range.end, range.begin + kWindowSamples);
  AppendRange(recording, range.begin, available);
  AppendZeros(kWindowSamples - (available - range.begin));
  // False only when the edges lag the samples, which the decoders never
  // let happen (audio::Resampler hands a second's edges out with its last
  // sample); the window then stays as the resampled recording has it.
  ApplyCropEdges(*recording.crop_edges, recording.num_samples,
                 range.begin / kSampleRateHz,
                 std::span<float>(mutable_audio_data() + base, kWindowSamples));
  starts_.push_back(base);
  ends_.push_back(base + kWindowSamples);
  run_id_ = nullptr;  // the next window starts a span of its own
}

void BatchWindows::AppendRange(const Recording& recording, int64_t from,
                               int64_t to) {
  if (recording.job != nullptr) {
    recording.job->ForEachAudioPieceLocked(
        from, to, [this](std::span<const float> piece) {
          Append(piece.data(), static_cast<int64_t>(piece.size()));
        });
    return;
  }
  Append(recording.audio.data() + (from - recording.offset), to - from);
}

void BatchWindows::Add(const Recording& recording, int w) {
  const pipeline::WindowRange range = pipeline::WindowSampleRange(
      recording.step_samples, recording.num_samples, w);
  const int64_t start = range.begin;
  const int64_t end = range.end;
  const int64_t base = size_;
  if (recording.gone || end <= start || start < recording.offset) {
    // Silence: an empty span (the recording's audio is gone or never was).
    starts_.push_back(base);
    ends_.push_back(base);
    run_id_ = nullptr;
    return;
  }
  const bool extends = run_id_ == recording.id && start >= run_lo_ &&
                       start <= run_hi_ && run_hi_ >= recording.offset;
  if (!extends) {
    run_id_ = recording.id;
    run_lo_ = start;
    run_hi_ = start;
    run_base_ = base;
  }
  if (end > run_hi_) {
    AppendRange(recording, run_hi_, end);
    run_hi_ = end;
  }
  starts_.push_back(run_base_ + (start - run_lo_));
  ends_.push_back(run_base_ + (end - run_lo_));
}

float* BatchWindows::Grow(int64_t count) {
  if (buffer_ != nullptr && !spilled_ &&
      static_cast<size_t>(size_ + count) > buffer_floats_) {
    // Outgrew the buffer: memory of its own for the rest of this batch.
    own_.assign(buffer_.get(), buffer_.get() + size_);
    spilled_ = true;
  }
  if (buffer_ == nullptr || spilled_) {
    own_.resize(static_cast<size_t>(size_ + count));  // own_.size() == size_
  }
  float* at = mutable_audio_data() + size_;
  size_ += count;
  return at;
}

void BatchWindows::Append(const float* src, int64_t count) {
  if (count <= 0) return;
  std::copy(src, src + count, Grow(count));
}

void BatchWindows::AppendZeros(int64_t count) {
  if (count <= 0) return;
  std::fill_n(Grow(count), count, 0.0f);
}

float* BatchWindows::mutable_audio_data() {
  return buffer_ != nullptr && !spilled_ ? buffer_.get() : own_.data();
}

const float* BatchWindows::audio_data() const {
  return buffer_ != nullptr && !spilled_ ? buffer_.get() : own_.data();
}

models::WindowSpans BatchWindows::spans() const {
  return models::WindowSpans{
      .audio = std::span<const float>(audio_data(), static_cast<size_t>(size_)),
      .starts = starts_,
      .ends = ends_};
}

}  // namespace diarization::runtime::internal
