// Internal: the windows of one device batch as spans of their jobs' audio
// (models::WindowSpans), so that the overlapping windows of a job (10 s
// long, 1 s apart) are copied once into the batch, not once per window, and
// cross to the device as one span (engine/models/cuda_window_upload.h). A
// run of windows of one job merges while each window starts inside the
// audio already taken; anything else starts a new span. Windows of a job
// that ended (cancelled, deadline, error) while their window sat in a popped
// batch have had their audio freed: they are silence, and their outputs
// are dropped after the batch. The offline networks pass
// (offline_networks.h) builds its batches here too, from a whole recording.
#ifndef DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_
#define DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/common/crop_edges.h"
#include "engine/models/model_interfaces.h"
#include "engine/runtime/job_state.h"

namespace diarization::runtime::internal {

class BatchWindows {
 public:
  // A recording as a batch sees it: `audio` holds its samples [offset,
  // offset + audio.size()); its first `num_samples` samples are known (a
  // stream's later audio has not arrived); its windows start every
  // `step_samples` (pipeline::WindowSampleRange). `gone`: its audio was
  // freed (the job ended), so its windows are silence. Windows of one `id`
  // may share their audio. `job`: the audio is that job's, in pieces
  // (JobState::ForEachAudioPieceLocked; its mutex held), and `audio` is
  // unused.
  struct Recording {
    const void* id = nullptr;
    const JobState* job = nullptr;
    std::span<const float> audio;
    int64_t offset = 0;
    int64_t num_samples = 0;
    int64_t step_samples = 0;
    bool gone = false;
    // For audio resampled from another rate: its crop edges, for AddCrop
    // (null or empty: none).
    const CropEdges* crop_edges = nullptr;
  };

  // Gathers the batches' audio into `buffer` (`floats` floats, e.g.
  // page-locked memory from Device::pinned_host_floats, so that the device
  // upload reads it directly) instead of memory of its own. A batch of n
  // windows copies at most n × kWindowSamples samples; a batch that would
  // outgrow `buffer` moves to memory of its own for that batch (same
  // spans, one more copy). Call before the first Add.
  void UseBuffer(std::shared_ptr<float[]> buffer, size_t floats);
  // UseBuffer with page-locked memory from `pinned_host_floats`
  // (Device::pinned_host_floats) for batches of up to `max_batch` windows;
  // nothing when it is unset. Its error is returned as it is.
  absl::Status UsePinnedBuffer(
      const std::function<absl::StatusOr<std::shared_ptr<float[]>>(size_t)>&
          pinned_host_floats,
      int max_batch);
  void Clear();
  // Adds window `w` of `recording` as the next window of the batch.
  void Add(const Recording& recording, int w);
  // The same for window `w` of `job`.
  void Add(const JobState& job, int w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu());
  // Window `w` as an embedding window: for a recording with crop edges,
  // pyannote's crop of the original audio resampled alone (the window's
  // samples, zero past the audio, with ApplyCropEdges), copied on its own
  // (it shares no span with its neighbours); else as Add.
  void AddCrop(const Recording& recording, int w);
  void AddCrop(const JobState& job, int w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu());
  // Valid until the next Clear/Add.
  models::WindowSpans spans() const;
  int size() const { return static_cast<int>(starts_.size()); }
  // Samples copied so far (for tests: a run of n consecutive windows takes
  // (n − 1)·step + 160000, not n·160000).
  int64_t audio_samples() const { return size_; }

 private:
  // Makes room for `count` more floats at the end of the batch's audio
  // (moving to memory of its own when `buffer_` is outgrown) and returns
  // where they start.
  float* Grow(int64_t count);
  // Appends [src, src + count) to the batch's audio.
  void Append(const float* src, int64_t count);
  // Appends `count` zeros.
  void AppendZeros(int64_t count);
  // Appends the recording's samples [from, to).
  void AppendRange(const Recording& recording, int64_t from, int64_t to);
  static Recording RecordingOf(const JobState& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu());
  const float* audio_data() const;
  float* mutable_audio_data();

  // The batch's audio is buffer_[0, size_) while it fits and `spilled_` is
  // false, else own_[0, size_).
  std::shared_ptr<float[]> buffer_;
  size_t buffer_floats_ = 0;
  std::vector<float> own_;
  bool spilled_ = false;
  int64_t size_ = 0;
  std::vector<int64_t> starts_, ends_;
  // The span being extended: its recording, its range in the recording's
  // samples, and where it begins in audio_.
  const void* run_id_ = nullptr;
  int64_t run_lo_ = 0, run_hi_ = 0, run_base_ = 0;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_BATCH_WINDOWS_H_
