// Internal: the state of one engine job, shared by the engine, the job's
// device worker, the batch pieces (batch_queue.h, batch_windows.h) and the
// caller's Job handle. Not part of the public API.
//
// JobState owns what the job knows of itself — its audio and its trimming,
// its windows and their progress, the bytes it holds, its share of device
// time, its tail times, its provisional clusterings and its delivery — and
// changes it only through the methods below, so each rule about a job's
// state is written once, here. The engine decides when (it calls these
// methods as audio, batches and clusterings come and go); the job books
// its own backlog and bytes in the AdmissionLedger under its ticket.
//
// Locking. mu() guards everything that changes after acceptance. Methods
// named *Locked need it held by the caller, which may then also call into
// the job's device worker (JobState::mu → DeviceWorker::mu_) and, through
// these methods, the ledger (JobState::mu → the ledger's, a leaf). The
// others take it themselves. What is fixed at acceptance (id, options,
// callbacks, ...) and terminal() are read without it.
#ifndef DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_
#define DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/common/crop_edges.h"
#include "engine/common/shapes.h"
#include "engine/runtime/cluster_input.h"
#include "engine/runtime/job_options.h"
#include "engine/runtime/job_results.h"
#include "engine/runtime/tail_times.h"
#include "engine/runtime/thread_pool.h"

namespace diarization::runtime::internal {

class AdmissionLedger;

// Network outputs of one window. Written only by the device worker while the
// window is in flight; read by clustering only after the window is done (the
// job mutex orders the two). See JobState::WindowOutputsLocked.
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

class JobState {
 public:
  // `ledger`: where the job books its backlog and bytes under `ticket`;
  // null only in unit tests of the batch pieces (nothing is booked then).
  JobState(uint64_t id, JobOptions options, JobCallbacks callbacks,
           bool streaming, int device, uint64_t ticket,
           ThreadPool* callback_pool,
           std::shared_ptr<AdmissionLedger> ledger = nullptr);
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;

  // --- Fixed at acceptance (no lock) ---
  uint64_t id() const { return id_; }
  const JobOptions& options() const { return options_; }
  const JobCallbacks& callbacks() const { return callbacks_; }
  bool streaming() const { return streaming_; }
  // Index into the engine's device workers.
  int device() const { return device_; }
  // Runs this job's callbacks one at a time, in order.
  Strand& strand() { return strand_; }
  // Set once, by EndLocked. Read without the mutex by device workers to
  // skip queued windows of finished jobs.
  bool terminal() const { return terminal_.load(); }
  absl::Mutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }

  // --- Intake: the job's audio and its windows ---
  // A whole recording (Submit): its audio ends on acceptance. Its windows
  // (pipeline::ComputeWindows) are appended to `added`.
  // `crop_edges`: the recording's, for audio resampled from another rate
  // (engine/common/crop_edges.h); empty otherwise.
  absl::Status TakeRecordingLocked(std::vector<float> audio,
                                   CropEdges crop_edges,
                                   std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A stream's next crop edges, before the samples they came with (the
  // windows those samples complete need them). Nothing for empty edges.
  void AppendCropEdgesLocked(const CropEdges& crop_edges)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the embedding windows of audio resampled from another rate see
  // near their ends (BatchWindows::AddCrop); empty for 16 kHz audio. Kept
  // whole (tens of bytes a second) until the audio is freed.
  const CropEdges& crop_edges_locked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return crop_edges_;
  }
  // A stream's next samples, booked as backlog; the windows they complete
  // are appended to `added`. Copied into the job's audio.
  absl::Status AppendLocked(std::span<const float> samples,
                            std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same, taking the buffer: one of at least kOwnedChunkSamples becomes
  // a piece of the job's audio as it is, without a copy (a smaller one is
  // copied into the last piece, so that pieces stay large).
  absl::Status AppendLocked(std::vector<float>&& samples,
                            std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The end of a stream's audio at `now`: its remaining (zero-padded)
  // windows are appended to `added`. INVALID_ARGUMENT when no audio came.
  absl::Status FinishLocked(absl::Time now, std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool finished_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return finished_;
  }
  // Known once the audio has ended (pipeline::ComputeWindows); -1 before.
  int num_windows_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return num_windows_;
  }
  // The job holds samples [audio_offset_locked(), num_samples_locked()) of
  // its 16 kHz audio, in pieces (the buffers it took or copied them into).
  int64_t audio_offset_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return audio_offset_;
  }
  int64_t num_samples_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return num_samples_;
  }
  // Calls `piece` with the held samples [from, to) in order, as spans of
  // the pieces they lie in (what BatchWindows copies a window from).
  // Requires audio_offset_locked() <= from <= to <= num_samples_locked().
  void ForEachAudioPieceLocked(
      int64_t from, int64_t to,
      absl::FunctionRef<void(std::span<const float>)> piece) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the samples before `sample` (no pending window needs them): whole
  // pieces as they are, the rest of a piece cut through is copied into a
  // fresh buffer, so the memory goes back. WindowDoneLocked trims through
  // it; public for the batch pieces' tests.
  void DropAudioBeforeLocked(int64_t sample) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A buffer appended by AppendLocked(std::vector<float>&&) of at least this
  // many samples (1 s) is kept as a piece of its own; the heap overhead per
  // piece is then under a thousandth of its samples.
  static constexpr int64_t kOwnedChunkSamples = kSampleRateHz;
  // Seconds of audio received so far (Job::audio_received_s).
  double AudioReceivedSeconds() const;

  // --- The end ---
  // The one end of the job (result or error): marks it terminal with
  // `status`, frees its audio and closes its ticket (its backlog, bytes,
  // peer call and device job go back at once). The windows' outputs stay:
  // a batch in flight may still write them. False when it had already
  // ended.
  bool EndLocked(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For a call after the end: the final error, or FAILED_PRECONDITION after
  // a result.
  absl::Status TerminalStatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- Window progress (the device worker, then the engine) ---
  // The outputs of window `w`, for the device worker to write while the
  // window is in one of its batches. Contract: the pointer is taken under
  // mu(); from then until the worker reports the window done (which ends in
  // WindowDoneLocked, under mu(), ordering the writes before any read) only
  // the stage thread that holds the window's batch writes through it, and
  // without the lock. The pointer stays valid while the job lives: windows
  // are freed only by TakeFinalInputLocked, once every window is done and
  // no batch refers to one.
  WindowData* WindowOutputsLocked(int w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A batch holding a window of the job ran from `batch_start` and the
  // job's share of it was `share` seconds (JobResult::processing_s); the
  // first batch's start ends the first window's wait. Takes the lock.
  void ChargeDeviceSeconds(double share, absl::Time batch_start);
  // Window `w` has its embeddings (`times`: its way through the stages).
  // Counts it; the audio its done prefix covers leaves the backlog (a
  // pending NotifyWhenBacklogAtMost resume is posted once under its
  // threshold); audio no pending window needs is dropped; the bytes are
  // booked. False when the window was already counted.
  bool WindowDoneLocked(int w, const WindowTimes& times)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int windows_done_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return windows_done_;
  }
  int windows_scheduled_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(window_done_.size());
  }

  // --- Backlog and memory (the Job handle) ---
  // This job's audio accepted and not yet through both networks, seconds.
  double BacklogSeconds() const;
  // Job::NotifyWhenBacklogAtMost with the threshold in samples.
  void NotifyWhenBacklogAtMost(int64_t at_samples,
                               std::function<void()> resume);
  // Job::memory_bytes: what the job holds now; 0 once it has ended.
  int64_t MemoryBytes() const;

  // --- The final clustering ---
  // True exactly once: when the audio has ended and every window is done.
  // Marks the clustering scheduled and measures the network parts of the
  // tail (the last window's way from the end of the audio).
  bool ScheduleFinalClusteringLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The host pool when the final clustering was queued (TailTimes).
  void NoteHostLoadLocked(int finals_running, int partials_running,
                          int finals_queued) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the host thread at `now`: the final clustering's input. The outputs
  // are in it now, so the windows and the audio are freed.
  ClusterInput TakeFinalInputLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's result for a final clustering that ended at `end`, all but
  // the output and the device name (the caller's).
  JobResult FinalResultLocked(absl::Time end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- Provisional clusterings (partial_results.h) ---
  // The number of windows for the next provisional clustering when one is
  // due (a stream with partial_interval_s, another interval through both
  // networks, none running, no final one scheduled); it is then running.
  std::optional<int> StartPartialLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the host thread: the input of windows [0, k), or nullopt (and the
  // provisional clustering ends) when the job ended or its final clustering
  // was scheduled meanwhile.
  std::optional<ClusterInput> GatherPartialLocked(int k)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The provisional clustering of `input` ended: its bytes go back; false
  // when the job ended meanwhile, else fills the counts of `partial`
  // (request id, audio received and processed).
  bool EndPartialLocked(const ClusterInput& input, PartialResult* partial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- Delivery ---
  struct Delivery {
    // The pending NotifyWhenBacklogAtMost resume, to call before
    // on_complete.
    std::function<void()> resume;
    int64_t peak_bytes = 0;
  };
  // The completion's turn on the strand at `now`: from here on nothing of
  // the job is posted before it. Completes `tail` (delivery, total) when
  // given (a result).
  Delivery StartDeliveryLocked(TailTimes* tail, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool delivering_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return delivering_;
  }

 private:
  // Grows the window list to `count` windows; appends the new ones.
  absl::Status AddWindowsLocked(int count, std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops audio no pending window needs (see job_state.cc for when).
  void TrimAudioLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Books `n` new samples (the backlog, the windows they complete, bytes).
  absl::Status AfterAppendLocked(int64_t n, std::vector<int>* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies `samples` to the end of the held audio: into the last piece's
  // spare room, else into a new piece of at least kOwnedChunkSamples.
  void CopyAudioLocked(std::span<const float> samples)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PushPieceLocked(std::vector<float> samples)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PopPieceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Books the bytes held now (and the peak).
  void UpdateBytesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t HeldBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies the network outputs of windows [0, k) (all done).
  ClusterInput GatherLocked(int k) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeAudioLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t id_;
  const JobOptions options_;
  const JobCallbacks callbacks_;
  const bool streaming_;
  const int device_;
  // The job's entry in the AdmissionLedger (backlog, bytes, peer, device).
  const uint64_t ticket_;
  const absl::Time accepted_time_;
  const std::shared_ptr<AdmissionLedger> ledger_;
  Strand strand_;
  std::atomic<bool> terminal_{false};

  mutable absl::Mutex mu_;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  // Samples [audio_offset_, num_samples_) of the job's 16 kHz audio, in
  // pieces that follow one another (a piece's first sample is `start`);
  // the prefix no pending window needs any more is dropped.
  struct AudioPiece {
    int64_t start = 0;
    std::vector<float> samples;
  };
  std::deque<AudioPiece> audio_ ABSL_GUARDED_BY(mu_);
  CropEdges crop_edges_ ABSL_GUARDED_BY(mu_);
  // The pieces' capacities, floats.
  int64_t audio_capacity_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t audio_offset_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_samples_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time finish_time_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Known at Finish (pipeline::ComputeWindows); -1 before.
  int num_windows_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::unique_ptr<WindowData>> windows_ ABSL_GUARDED_BY(mu_);
  std::vector<uint8_t> window_done_ ABSL_GUARDED_BY(mu_);
  int windows_done_ ABSL_GUARDED_BY(mu_) = 0;
  // Windows 0..contiguous_done_-1 are all done.
  int contiguous_done_ ABSL_GUARDED_BY(mu_) = 0;
  // Samples counted as processed (end of the done prefix's coverage).
  int64_t processed_samples_ ABSL_GUARDED_BY(mu_) = 0;
  // This job's share of device batch time, total and before Finish.
  double device_seconds_ ABSL_GUARDED_BY(mu_) = 0.0;
  double device_seconds_before_finish_ ABSL_GUARDED_BY(mu_) = 0.0;
  bool first_batch_seen_ ABSL_GUARDED_BY(mu_) = false;
  double first_window_wait_s_ ABSL_GUARDED_BY(mu_) = 0.0;
  bool clustering_scheduled_ ABSL_GUARDED_BY(mu_) = false;
  // For JobResult::tail: the latest window to get its embeddings, when the
  // last one did (the final clustering was queued), when a host thread took
  // the final clustering and when it ended; the parts measured so far.
  WindowTimes last_window_ ABSL_GUARDED_BY(mu_);
  absl::Time windows_done_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time clustering_start_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time clustering_end_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  TailTimes tail_ ABSL_GUARDED_BY(mu_);
  bool partial_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  double next_partial_s_ ABSL_GUARDED_BY(mu_) = 0.0;
  // Bytes of clustering inputs gathered for host tasks now running.
  int64_t cluster_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // NotifyWhenBacklogAtMost: the pending resume and its threshold.
  std::function<void()> resume_ ABSL_GUARDED_BY(mu_);
  int64_t resume_at_samples_ ABSL_GUARDED_BY(mu_) = 0;
  // The completion is being delivered (on the strand); nothing of the job
  // is posted before it from then on.
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_JOB_STATE_H_
