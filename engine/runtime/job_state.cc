#include "engine/runtime/job_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/windows.h"
#include "engine/runtime/admission_ledger.h"

namespace diarization::runtime::internal {
namespace {

double Seconds(int64_t samples) {
  return static_cast<double>(samples) / kSampleRateHz;
}

}  // namespace

JobState::JobState(uint64_t id, JobOptions options, JobCallbacks callbacks,
                   bool streaming, int device, uint64_t ticket,
                   ThreadPool* callback_pool,
                   std::shared_ptr<AdmissionLedger> ledger)
    : id_(id),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      streaming_(streaming),
      device_(device),
      ticket_(ticket),
      accepted_time_(absl::Now()),
      ledger_(std::move(ledger)),
      strand_(callback_pool),
      next_partial_s_(options_.partial_interval_s) {}

// ------------------------------------------------------------- intake --

absl::Status JobState::TakeRecordingLocked(std::vector<float> audio,
                                           CropEdges crop_edges,
                                           std::vector<int>* added) {
  const int64_t n = static_cast<int64_t>(audio.size());
  crop_edges_ = std::move(crop_edges);
  const pipeline::WindowLayout layout =
      pipeline::ComputeWindows(n, options_.config);
  PushPieceLocked(std::move(audio));
  num_samples_ = n;
  finished_ = true;
  finish_time_ = accepted_time_;
  absl::Status error = AddWindowsLocked(layout.num_windows, added);
  if (error.ok()) num_windows_ = layout.num_windows;
  UpdateBytesLocked();
  return error;
}

void JobState::AppendCropEdgesLocked(const CropEdges& crop_edges) {
  if (crop_edges.empty()) return;
  crop_edges_.Append(crop_edges);
  UpdateBytesLocked();
}

absl::Status JobState::AppendLocked(std::span<const float> samples,
                                    std::vector<int>* added) {
  CopyAudioLocked(samples);
  return AfterAppendLocked(static_cast<int64_t>(samples.size()), added);
}

absl::Status JobState::AppendLocked(std::vector<float>&& samples,
                                    std::vector<int>* added) {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (n >= kOwnedChunkSamples) {
    PushPieceLocked(std::move(samples));
  } else {
    CopyAudioLocked(samples);
  }
  return AfterAppendLocked(n, added);
}

void JobState::PushPieceLocked(std::vector<float> samples) {
  const int64_t start =
      audio_.empty() ? audio_offset_
                     : audio_.back().start +
                           static_cast<int64_t>(audio_.back().samples.size());
  audio_capacity_ += static_cast<int64_t>(samples.capacity());
  audio_.push_back(AudioPiece{.start = start, .samples = std::move(samples)});
}

void JobState::PopPieceLocked() {
  audio_capacity_ -= static_cast<int64_t>(audio_.front().samples.capacity());
  audio_.pop_front();
}

void JobState::CopyAudioLocked(std::span<const float> samples) {
  if (samples.empty()) return;
  if (!audio_.empty()) {
    std::vector<float>& last = audio_.back().samples;
    if (last.capacity() - last.size() >= samples.size()) {
      last.insert(last.end(), samples.begin(), samples.end());  // no growth
      return;
    }
  }
  // A new piece with room for the next small appends, so that a stream of
  // small messages does not make a piece (and a heap block) of each.
  std::vector<float> piece;
  piece.reserve(std::max<size_t>(samples.size(), kOwnedChunkSamples));
  piece.assign(samples.begin(), samples.end());
  PushPieceLocked(std::move(piece));
}

absl::Status JobState::AfterAppendLocked(int64_t n, std::vector<int>* added) {
  if (ledger_ != nullptr) ledger_->Add(ticket_, n);
  num_samples_ += n;
  const absl::Status error = AddWindowsLocked(
      FullWindows(num_samples_, options_.config.step_samples), added);
  UpdateBytesLocked();
  return error;
}

absl::Status JobState::FinishLocked(absl::Time now, std::vector<int>* added) {
  finished_ = true;
  finish_time_ = now;
  if (num_samples_ == 0) {
    return absl::InvalidArgumentError(
        "the stream ended without any audio samples");
  }
  const pipeline::WindowLayout layout =
      pipeline::ComputeWindows(num_samples_, options_.config);
  RETURN_IF_ERROR(AddWindowsLocked(layout.num_windows, added));
  num_windows_ = layout.num_windows;
  UpdateBytesLocked();
  return absl::OkStatus();
}

absl::Status JobState::AddWindowsLocked(int count, std::vector<int>* added) {
  const int have = static_cast<int>(windows_.size());
  if (count < have) {
    return absl::InternalError(absl::StrCat("window layout shrank from ", have,
                                            " to ", count, " windows for ",
                                            num_samples_, " samples"));
  }
  for (int c = have; c < count; ++c) {
    windows_.push_back(std::make_unique<WindowData>());
    window_done_.push_back(0);
    added->push_back(c);
  }
  return absl::OkStatus();
}

void JobState::ForEachAudioPieceLocked(
    int64_t from, int64_t to,
    absl::FunctionRef<void(std::span<const float>)> piece) const {
  if (from >= to) return;
  // The last piece starting at or before `from`.
  auto it = std::upper_bound(
      audio_.begin(), audio_.end(), from,
      [](int64_t s, const AudioPiece& p) { return s < p.start; });
  if (it != audio_.begin()) --it;
  for (; it != audio_.end() && from < to; ++it) {
    const int64_t end =
        std::min(to, it->start + static_cast<int64_t>(it->samples.size()));
    if (end <= from) continue;
    piece(std::span<const float>(it->samples)
              .subspan(static_cast<size_t>(from - it->start),
                       static_cast<size_t>(end - from)));
    from = end;
  }
}

// Pieces no pending window needs go whole, without a copy. A piece cut
// through (a recording is one piece) is trimmed only when its dropped part
// is at least a window and at least what stays of it, so the copies of a
// long recording add up to O(its length) while a live stream keeps only a
// few windows of audio.
void JobState::TrimAudioLocked() {
  const int64_t keep_from =
      std::min(options_.config.step_samples * contiguous_done_, num_samples_);
  while (!audio_.empty() &&
         audio_.front().start +
                 static_cast<int64_t>(audio_.front().samples.size()) <=
             keep_from) {
    PopPieceLocked();
  }
  audio_offset_ = audio_.empty() ? std::max(audio_offset_, keep_from)
                                 : audio_.front().start;
  if (audio_.empty()) return;
  const AudioPiece& first = audio_.front();
  const int64_t drop = keep_from - first.start;
  const int64_t stays = static_cast<int64_t>(first.samples.size()) - drop;
  if (drop >= kWindowSamples && drop >= stays) DropAudioBeforeLocked(keep_from);
}

void JobState::DropAudioBeforeLocked(int64_t sample) {
  sample = std::min(sample, num_samples_);
  if (sample <= audio_offset_) return;
  while (!audio_.empty() &&
         audio_.front().start +
                 static_cast<int64_t>(audio_.front().samples.size()) <=
             sample) {
    PopPieceLocked();
  }
  if (!audio_.empty() && audio_.front().start < sample) {
    // A fresh vector: erase() would keep the whole capacity.
    AudioPiece& first = audio_.front();
    std::vector<float> rest(first.samples.begin() + (sample - first.start),
                            first.samples.end());
    audio_capacity_ += static_cast<int64_t>(rest.capacity()) -
                       static_cast<int64_t>(first.samples.capacity());
    first.samples = std::move(rest);
    first.start = sample;
  }
  audio_offset_ = sample;
}

double JobState::AudioReceivedSeconds() const {
  absl::MutexLock lock(&mu_);
  return Seconds(num_samples_);
}

void JobState::FreeAudioLocked() {
  audio_.clear();
  audio_.shrink_to_fit();
  audio_capacity_ = 0;
  crop_edges_ = CropEdges{};
}

// ---------------------------------------------------------------- end --

bool JobState::EndLocked(const absl::Status& status) {
  if (terminal_.exchange(true)) return false;
  final_status_ = status;
  FreeAudioLocked();
  if (ledger_ != nullptr) ledger_->Close(ticket_);
  return true;
}

absl::Status JobState::TerminalStatusLocked() const {
  if (!final_status_.ok()) return final_status_;
  return absl::FailedPreconditionError("the job has already completed");
}

// ----------------------------------------------------- window progress --

WindowData* JobState::WindowOutputsLocked(int w) { return windows_[w].get(); }

void JobState::ChargeDeviceSeconds(double share, absl::Time batch_start) {
  absl::MutexLock lock(&mu_);
  device_seconds_ += share;
  if (!finished_) device_seconds_before_finish_ += share;
  if (!first_batch_seen_) {
    first_batch_seen_ = true;
    first_window_wait_s_ =
        std::max(0.0, absl::ToDoubleSeconds(batch_start - accepted_time_));
  }
}

bool JobState::WindowDoneLocked(int w, const WindowTimes& times) {
  if (window_done_[w]) return false;
  window_done_[w] = 1;
  last_window_ = times;
  ++windows_done_;
  const int total = static_cast<int>(window_done_.size());
  while (contiguous_done_ < total && window_done_[contiguous_done_]) {
    ++contiguous_done_;
  }
  const int64_t step = options_.config.step_samples;
  int64_t processed = 0;
  if (contiguous_done_ > 0) {
    processed = std::min<int64_t>(
        num_samples_, step * (contiguous_done_ - 1) + kWindowSamples);
  }
  if (finished_ && windows_done_ == num_windows_) processed = num_samples_;
  if (processed > processed_samples_) {
    const int64_t left =
        ledger_ != nullptr
            ? ledger_->Release(ticket_, processed - processed_samples_)
            : 0;
    processed_samples_ = processed;
    if (resume_ && left <= resume_at_samples_) {
      strand_.Post(std::move(resume_));
      resume_ = nullptr;
    }
  }
  TrimAudioLocked();
  UpdateBytesLocked();
  return true;
}

// ------------------------------------------------- backlog and memory --

double JobState::BacklogSeconds() const {
  return ledger_ != nullptr ? Seconds(ledger_->backlog_samples(ticket_)) : 0.0;
}

void JobState::NotifyWhenBacklogAtMost(int64_t at_samples,
                                       std::function<void()> resume) {
  absl::MutexLock lock(&mu_);
  if (delivering_) {
    strand_.Post(std::move(resume));
    return;
  }
  resume_ = nullptr;  // a later call replaces a pending one
  const int64_t backlog =
      ledger_ != nullptr ? ledger_->backlog_samples(ticket_) : 0;
  if (!terminal() && backlog > at_samples) {
    resume_ = std::move(resume);
    resume_at_samples_ = at_samples;
    return;
  }
  // Terminal (not yet delivered): the delivery calls it before
  // on_complete; under the threshold: now.
  if (terminal()) {
    resume_ = std::move(resume);
  } else {
    strand_.Post(std::move(resume));
  }
}

int64_t JobState::HeldBytesLocked() const {
  return static_cast<int64_t>(audio_capacity_ * sizeof(float) +
                              crop_edges_.bytes() +
                              windows_.size() * sizeof(WindowData) +
                              windows_.capacity() * sizeof(windows_[0]) +
                              window_done_.capacity()) +
         cluster_bytes_;
}

int64_t JobState::MemoryBytes() const {
  absl::MutexLock lock(&mu_);
  return terminal() ? 0 : HeldBytesLocked();
}

void JobState::UpdateBytesLocked() {
  const int64_t bytes = HeldBytesLocked();
  peak_bytes_ = std::max(peak_bytes_, bytes);
  if (ledger_ != nullptr) ledger_->SetBytes(ticket_, bytes);
}

// --------------------------------------------------- final clustering --

bool JobState::ScheduleFinalClusteringLocked(absl::Time now) {
  if (!finished_ || clustering_scheduled_ || num_windows_ < 0 ||
      windows_done_ != num_windows_) {
    return false;
  }
  clustering_scheduled_ = true;
  windows_done_time_ = now;
  // The network parts of the tail: the last window's way from the end of
  // the audio to its embeddings (each moment before the end of the audio
  // counts as the end).
  absl::Time t = finish_time_;
  auto part = [&t](absl::Time until) {
    if (until <= t) return 0.0;
    const double s = absl::ToDoubleSeconds(until - t);
    t = until;
    return s;
  };
  tail_.segmentation_wait_s = part(last_window_.segmentation_start);
  tail_.segmentation_s = part(last_window_.segmentation_end);
  tail_.embedding_wait_s = part(last_window_.embedding_start);
  tail_.embedding_s = part(last_window_.embedding_end);
  return true;
}

void JobState::NoteHostLoadLocked(int finals_running, int partials_running,
                                  int finals_queued) {
  tail_.finals_running = finals_running;
  tail_.partials_running = partials_running;
  tail_.finals_queued = finals_queued;
}

ClusterInput JobState::GatherLocked(int k) const {
  ClusterInput in;
  in.num_windows = k;
  in.config = options_.config;
  in.hints = options_.hints;
  in.segmentations.resize(static_cast<size_t>(k) * kFramesPerWindow *
                          kLocalSpeakers);
  in.embeddings.resize(static_cast<size_t>(k) * kLocalSpeakers * kEmbeddingDim);
  for (int c = 0; c < k; ++c) {
    const WindowData& d = *windows_[c];
    std::copy(d.segmentation.begin(), d.segmentation.end(),
              in.segmentations.begin() +
                  static_cast<size_t>(c) * d.segmentation.size());
    std::copy(
        d.embeddings.begin(), d.embeddings.end(),
        in.embeddings.begin() + static_cast<size_t>(c) * d.embeddings.size());
  }
  return in;
}

ClusterInput JobState::TakeFinalInputLocked(absl::Time now) {
  clustering_start_time_ = now;
  ClusterInput input = GatherLocked(num_windows_);
  // The outputs are in `input` now (every window is done, so no batch
  // refers to them); the windows and audio are not needed.
  windows_.clear();
  windows_.shrink_to_fit();
  window_done_.clear();
  window_done_.shrink_to_fit();
  FreeAudioLocked();
  cluster_bytes_ += input.bytes();
  UpdateBytesLocked();
  return input;
}

JobResult JobState::FinalResultLocked(absl::Time end) {
  JobResult result;
  result.request_id = options_.request_id;
  result.num_windows = num_windows_;
  result.audio_s = Seconds(num_samples_);
  result.first_window_wait_s = first_window_wait_s_;
  result.processing_s =
      device_seconds_before_finish_ + absl::ToDoubleSeconds(end - finish_time_);
  result.peak_memory_bytes = peak_bytes_;
  clustering_end_time_ = end;
  const absl::Time embedded =
      std::max(finish_time_, last_window_.embedding_end);
  tail_.host_wait_s =
      std::max(0.0, absl::ToDoubleSeconds(clustering_start_time_ - embedded));
  tail_.clustering_s =
      std::max(0.0, absl::ToDoubleSeconds(end - clustering_start_time_));
  result.tail = tail_;
  return result;
}

// ------------------------------------------- provisional clusterings --

std::optional<int> JobState::StartPartialLocked() {
  if (!streaming_ || options_.partial_interval_s <= 0.0 ||
      !callbacks_.on_partial || partial_in_flight_ || clustering_scheduled_ ||
      contiguous_done_ == 0) {
    return std::nullopt;
  }
  const double processed_s = Seconds(processed_samples_);
  if (processed_s < next_partial_s_) return std::nullopt;
  partial_in_flight_ = true;
  next_partial_s_ = processed_s + options_.partial_interval_s;
  return contiguous_done_;
}

std::optional<ClusterInput> JobState::GatherPartialLocked(int k) {
  // Once the final clustering is scheduled (it may already have taken the
  // windows' outputs) a provisional one has no point.
  if (terminal() || clustering_scheduled_) {
    partial_in_flight_ = false;
    return std::nullopt;
  }
  ClusterInput input = GatherLocked(k);
  cluster_bytes_ += input.bytes();
  UpdateBytesLocked();
  return input;
}

bool JobState::EndPartialLocked(const ClusterInput& input,
                                PartialResult* partial) {
  partial_in_flight_ = false;
  cluster_bytes_ -= input.bytes();
  if (terminal()) return false;
  UpdateBytesLocked();
  const int k = input.num_windows;
  partial->request_id = options_.request_id;
  partial->audio_received_s = Seconds(num_samples_);
  partial->audio_processed_s = Seconds(std::min<int64_t>(
      num_samples_, options_.config.step_samples * (k - 1) + kWindowSamples));
  return true;
}

// ----------------------------------------------------------- delivery --

JobState::Delivery JobState::StartDeliveryLocked(TailTimes* tail,
                                                 absl::Time now) {
  delivering_ = true;
  Delivery d;
  d.resume = std::move(resume_);
  resume_ = nullptr;
  d.peak_bytes = peak_bytes_;
  if (tail != nullptr) {
    tail->delivery_s =
        std::max(0.0, absl::ToDoubleSeconds(now - clustering_end_time_));
    tail->total_s = tail->segmentation_wait_s + tail->segmentation_s +
                    tail->embedding_wait_s + tail->embedding_s +
                    tail->host_wait_s + tail->clustering_s + tail->delivery_s;
  }
  return d;
}

}  // namespace diarization::runtime::internal
