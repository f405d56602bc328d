// Internal: the state of one engine job, shared by the engine, the job's
// device worker and the caller's Job handle. Not part of the public API.
#ifndef DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_
#define DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/common/crop_edges.h"
#include "engine/models/model_interfaces.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime::internal {

// Network outputs of one window. Written only by the device worker while the
// window is in flight; read by clustering only after the window is done (the
// job mutex orders the two).
struct WindowData {
  std::array<float, kFramesPerWindow * kLocalSpeakers>
      segmentation;                                              // (589, 3) 0/1
  std::array<float, kLocalSpeakers * kFramesPerWindow> masks;    // (3, 589)
  std::array<float, kLocalSpeakers * kEmbeddingDim> embeddings;  // (3, 256)
};

// One window's way through the device stages (for the job's TailTimes):
// queued for segmentation, its segmentation batch, its embedding batch.
struct WindowTimes {
  absl::Time segmentation_queued = absl::InfinitePast();
  absl::Time segmentation_start = absl::InfinitePast();
  absl::Time segmentation_end = absl::InfinitePast();
  absl::Time embedding_start = absl::InfinitePast();
  absl::Time embedding_end = absl::InfinitePast();
};

// Number of full windows (ending inside the audio) for `num_samples`.
inline int FullWindows(int64_t num_samples, int64_t step_samples) {
  if (num_samples < kWindowSamples) return 0;
  return static_cast<int>(1 + (num_samples - kWindowSamples) / step_samples);
}

struct JobState {
  JobState(uint64_t id_in, JobOptions options_in, JobCallbacks callbacks_in,
           bool streaming_in, int device_in, uint64_t ticket_in,
           ThreadPool* callback_pool)
      : id(id_in),
        options(std::move(options_in)),
        callbacks(std::move(callbacks_in)),
        streaming(streaming_in),
        device(device_in),
        ticket(ticket_in),
        accepted_time(absl::Now()),
        strand(callback_pool),
        next_partial_s(options.partial_interval_s) {}

  const uint64_t id;
  const JobOptions options;
  const JobCallbacks callbacks;
  const bool streaming;
  const int device;  // index into the engine's workers
  // The job's entry in the AdmissionLedger (backlog, bytes, peer, device).
  const uint64_t ticket;
  const absl::Time accepted_time;
  // Runs this job's callbacks one at a time, in order.
  Strand strand;

  // Set once, by the completion (result or error). Read without the mutex
  // by device workers to skip queued windows of finished jobs.
  std::atomic<bool> terminal{false};

  absl::Mutex mu;
  absl::Status final_status ABSL_GUARDED_BY(mu);
  // Samples [audio_offset, num_samples) of the job's 16 kHz audio; the
  // prefix no pending window needs any more is dropped.
  std::vector<float> audio ABSL_GUARDED_BY(mu);
  int64_t audio_offset ABSL_GUARDED_BY(mu) = 0;
  // For audio resampled from another rate: what the embedding crops see
  // near their ends (audio/crop_edges.h); kept whole (tens of bytes a
  // second).
  CropEdges crop_edges ABSL_GUARDED_BY(mu);
  int64_t num_samples ABSL_GUARDED_BY(mu) = 0;
  bool finished ABSL_GUARDED_BY(mu) = false;
  absl::Time finish_time ABSL_GUARDED_BY(mu) = absl::InfiniteFuture();
  // Known at Finish (pipeline::ComputeWindows); -1 before.
  int num_windows ABSL_GUARDED_BY(mu) = -1;
  std::vector<std::unique_ptr<WindowData>> windows ABSL_GUARDED_BY(mu);
  std::vector<uint8_t> window_done ABSL_GUARDED_BY(mu);
  int windows_done ABSL_GUARDED_BY(mu) = 0;
  // Windows 0..contiguous_done-1 are all done.
  int contiguous_done ABSL_GUARDED_BY(mu) = 0;
  // Samples counted as processed (end of the done prefix's coverage).
  int64_t processed_samples ABSL_GUARDED_BY(mu) = 0;
  // This job's share of device batch time, total and before Finish.
  double device_seconds ABSL_GUARDED_BY(mu) = 0.0;
  double device_seconds_before_finish ABSL_GUARDED_BY(mu) = 0.0;
  bool first_batch_seen ABSL_GUARDED_BY(mu) = false;
  double first_window_wait_s ABSL_GUARDED_BY(mu) = 0.0;
  bool clustering_scheduled ABSL_GUARDED_BY(mu) = false;
  // For JobResult::tail: the latest window to get its embeddings, when the
  // last one did (the final clustering was queued), when a host thread took
  // the final clustering and when it ended; the parts measured so far.
  WindowTimes last_window ABSL_GUARDED_BY(mu);
  absl::Time windows_done_time ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  absl::Time clustering_start_time ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  absl::Time clustering_end_time ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  TailTimes tail ABSL_GUARDED_BY(mu);
  bool partial_in_flight ABSL_GUARDED_BY(mu) = false;
  double next_partial_s ABSL_GUARDED_BY(mu) = 0.0;
  // Bytes of clustering inputs gathered for host tasks now running.
  int64_t cluster_bytes ABSL_GUARDED_BY(mu) = 0;
  int64_t peak_bytes ABSL_GUARDED_BY(mu) = 0;
  // NotifyWhenBacklogAtMost: the pending resume and its threshold.
  std::function<void()> resume ABSL_GUARDED_BY(mu);
  int64_t resume_at_samples ABSL_GUARDED_BY(mu) = 0;
  // The completion is being delivered (on the strand); nothing of the job
  // is posted before it from then on.
  bool delivering ABSL_GUARDED_BY(mu) = false;

  // Bytes of host memory the job holds (Job::memory_bytes).
  int64_t HeldBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return static_cast<int64_t>(audio.capacity() * sizeof(float) +
                                crop_edges.bytes() +
                                windows.size() * sizeof(WindowData) +
                                windows.capacity() * sizeof(windows[0]) +
                                window_done.capacity()) +
           cluster_bytes;
  }
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_
