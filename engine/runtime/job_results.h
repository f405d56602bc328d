// What a job hands back: its final result (JobResult) and the provisional
// ones of a stream (PartialResult).
#ifndef DIARIZATION_ENGINE_RUNTIME_JOB_RESULTS_H_
#define DIARIZATION_ENGINE_RUNTIME_JOB_RESULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/pipeline/diarization.h"
#include "engine/pipeline/segment.h"
#include "engine/runtime/tail_times.h"

namespace diarization::runtime {

struct JobResult {
  std::string request_id;
  // Segments (regular and exclusive views), labels, centroids.
  pipeline::DiarizationOutput output;
  // Number of windows that went through the networks.
  int num_windows = 0;
  // Seconds of 16 kHz audio in the job.
  double audio_s = 0.0;
  // Wall seconds from the end of the audio (Finish, or Submit) to the
  // result, plus this job's share of device batch time spent before the end
  // of the audio (a batch's time is shared by its windows).
  double processing_s = 0.0;
  // audio_s / processing_s.
  double rtfx = 0.0;
  // Device that ran the networks ("cpu", "cuda:0", ...).
  std::string device;
  // Seconds from acceptance to the first window's batch start (queue wait
  // of the job's first window).
  double first_window_wait_s = 0.0;
  // Most bytes the job held at once (see Job::memory_bytes).
  int64_t peak_memory_bytes = 0;
  // From the end of the audio to this result, by part.
  TailTimes tail;
  // Only with JobOptions::return_intermediates: (C × 589 × 3) binarized
  // segmentations and (C × 3 × 256) embeddings, window-major.
  std::vector<float> segmentations;
  std::vector<float> embeddings;
};

struct PartialResult {
  std::string request_id;
  // Seconds of audio appended so far.
  double audio_received_s = 0.0;
  // Seconds of audio covered by the windows that have gone through both
  // networks (windows 0..k-1: (k-1)·step + 10 s, at most audio_received_s).
  double audio_processed_s = 0.0;
  // Provisional regular-view segments; labels may change in the final result.
  std::vector<Segment> segments;
  std::vector<Segment> exclusive_segments;
  // The provisional clustering's labels and one centroid per label (as
  // DiarizationOutput's), for identification and stable labels.
  std::vector<std::string> labels;
  std::vector<std::vector<float>> centroids;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_JOB_RESULTS_H_
