#include "server/separate_channels.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/status_macros.h"

namespace diarization::server {
namespace {

void AppendRelabelled(const std::vector<Segment>& from, int channel,
                      std::vector<Segment>& to) {
  for (Segment s : from) {
    s.speaker = ChannelLabel(channel, s.speaker);
    to.push_back(std::move(s));
  }
}

void SortSegments(std::vector<Segment>& segments) {
  std::stable_sort(segments.begin(), segments.end(),
                   [](const Segment& a, const Segment& b) {
                     return std::tie(a.start_s, a.end_s, a.speaker) <
                            std::tie(b.start_s, b.end_s, b.speaker);
                   });
}

// The state shared by the per-channel jobs' completions and the handle.
struct GroupState {
  explicit GroupState(size_t n, runtime::JobCallbacks callbacks)
      : results(n),
        remaining(static_cast<int>(n)),
        callbacks(std::move(callbacks)) {}

  absl::Mutex mu;
  std::vector<std::optional<runtime::JobResult>> results ABSL_GUARDED_BY(mu);
  int remaining ABSL_GUARDED_BY(mu);
  absl::Status first_error ABSL_GUARDED_BY(mu);
  // Until Submit of every channel succeeded, completions are not reported
  // (a failed SubmitPerChannel reports nothing).
  bool armed ABSL_GUARDED_BY(mu) = false;
  std::vector<std::shared_ptr<runtime::Job>> jobs ABSL_GUARDED_BY(mu);
  runtime::JobCallbacks callbacks;

  void CancelAll() {
    std::vector<std::shared_ptr<runtime::Job>> jobs_copy;
    {
      absl::MutexLock lock(&mu);
      jobs_copy = jobs;
    }
    for (const auto& job : jobs_copy) job->Cancel();
  }

  // Called once per channel, on an engine thread.
  void OnChannelComplete(size_t channel,
                         absl::StatusOr<runtime::JobResult> result) {
    bool cancel_others = false;
    bool last = false;
    bool report = false;
    {
      absl::MutexLock lock(&mu);
      if (result.ok()) {
        results[channel] = *std::move(result);
      } else if (first_error.ok()) {
        first_error = result.status();
        cancel_others = true;
      }
      last = --remaining == 0;
      report = last && armed;
    }
    if (cancel_others) CancelAll();
    if (!report) return;
    absl::StatusOr<runtime::JobResult> merged;
    {
      absl::MutexLock lock(&mu);
      if (!first_error.ok()) {
        merged = first_error;
      } else {
        std::vector<runtime::JobResult> all;
        for (auto& r : results) all.push_back(*std::move(r));
        merged = MergeChannelResults(std::move(all));
      }
    }
    callbacks.on_complete(std::move(merged));
  }
};

class ChannelJobGroup final : public runtime::Job {
 public:
  explicit ChannelJobGroup(std::shared_ptr<GroupState> state)
      : state_(std::move(state)) {
    absl::MutexLock lock(&state_->mu);
    jobs_ = state_->jobs;
  }

  absl::Status Append(std::span<const float>, const CropEdges&) override {
    return absl::FailedPreconditionError(
        "Append on a whole recording's per-channel jobs");
  }
  absl::Status Finish() override {
    return absl::FailedPreconditionError(
        "Finish on a whole recording's per-channel jobs");
  }
  void Cancel() override { state_->CancelAll(); }
  const std::string& device() const override { return jobs_[0]->device(); }
  double audio_received_s() const override {
    double s = 0.0;
    for (const auto& job : jobs_) s += job->audio_received_s();
    return s;
  }
  double backlog_audio_s() const override {
    double s = 0.0;
    for (const auto& job : jobs_) s += job->backlog_audio_s();
    return s;
  }
  // Not used for whole recordings: resume when every channel is at most
  // `seconds` behind is not needed by DiarizeFile; the first job's.
  void NotifyWhenBacklogAtMost(double seconds,
                               std::function<void()> resume) override {
    jobs_[0]->NotifyWhenBacklogAtMost(seconds, std::move(resume));
  }
  int64_t memory_bytes() const override {
    int64_t bytes = 0;
    for (const auto& job : jobs_) bytes += job->memory_bytes();
    return bytes;
  }

 private:
  std::shared_ptr<GroupState> state_;
  std::vector<std::shared_ptr<runtime::Job>> jobs_;
};

}  // namespace

std::string ChannelLabel(int channel, const std::string& label) {
  return absl::StrCat("ch", channel, ":", label);
}

runtime::JobResult MergeChannelResults(
    std::vector<runtime::JobResult> per_channel) {
  runtime::JobResult merged;
  if (per_channel.empty()) return merged;
  merged.request_id = per_channel[0].request_id;
  std::vector<std::string> devices;
  for (size_t c = 0; c < per_channel.size(); ++c) {
    runtime::JobResult& r = per_channel[c];
    const int channel = static_cast<int>(c);
    AppendRelabelled(r.output.segments, channel, merged.output.segments);
    AppendRelabelled(r.output.exclusive_segments, channel,
                     merged.output.exclusive_segments);
    for (size_t i = 0; i < r.output.labels.size(); ++i) {
      merged.output.labels.push_back(ChannelLabel(channel, r.output.labels[i]));
      if (i < r.output.centroids.size()) {
        merged.output.centroids.push_back(std::move(r.output.centroids[i]));
      }
    }
    merged.num_windows += r.num_windows;
    merged.audio_s = std::max(merged.audio_s, r.audio_s);
    if (r.processing_s >= merged.processing_s) {
      merged.processing_s = r.processing_s;
      merged.tail = r.tail;
    }
    merged.first_window_wait_s =
        std::max(merged.first_window_wait_s, r.first_window_wait_s);
    merged.peak_memory_bytes += r.peak_memory_bytes;
    if (std::find(devices.begin(), devices.end(), r.device) == devices.end()) {
      devices.push_back(r.device);
    }
  }
  SortSegments(merged.output.segments);
  SortSegments(merged.output.exclusive_segments);
  merged.device = absl::StrJoin(devices, ",");
  merged.rtfx =
      merged.processing_s > 0.0 ? merged.audio_s / merged.processing_s : 0.0;
  return merged;
}

std::string RttmWithChannelColumn(const std::string& rttm) {
  std::string out;
  out.reserve(rttm.size());
  for (absl::string_view line : absl::StrSplit(rttm, '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    int channel = 0;
    if (fields.size() >= 8 && absl::StartsWith(fields[7], "ch")) {
      const size_t colon = fields[7].find(':');
      if (colon != std::string::npos &&
          absl::SimpleAtoi(fields[7].substr(2, colon - 2), &channel) &&
          channel >= 0) {
        fields[2] = absl::StrCat(channel + 1);
      }
    }
    absl::StrAppend(&out, absl::StrJoin(fields, " "), "\n");
  }
  return out;
}

absl::StatusOr<std::vector<audio::Waveform>> DecodeEachChannel(
    std::span<const std::byte> bytes, bool encoded, audio::PcmFormat raw,
    int channel_count, const audio::DecodeLimits& limits, double max_duration_s,
    const audio::DecodeControl& control) {
  std::vector<audio::Waveform> channels;
  for (int c = 0; c < channel_count; ++c) {
    audio::Waveform wave;
    if (encoded) {
      ASSIGN_OR_RETURN(std::unique_ptr<audio::FileDecoder> file,
                       audio::FileDecoder::Open(bytes, limits));
      RETURN_IF_ERROR(file->SelectChannel(c));
      ASSIGN_OR_RETURN(wave, file->Decode(max_duration_s, control));
    } else {
      raw.channel_index = c;
      ASSIGN_OR_RETURN(wave, audio::DecodePcm(bytes, raw, limits, control));
    }
    channels.push_back(std::move(wave));
  }
  return channels;
}

absl::StatusOr<std::unique_ptr<runtime::Job>> SubmitPerChannel(
    runtime::Engine& engine, const runtime::JobOptions& options,
    std::vector<audio::Waveform> channels, runtime::JobCallbacks callbacks,
    std::vector<runtime::Reservation> reservations) {
  if (channels.empty() || channels.size() != reservations.size()) {
    return absl::InternalError("SubmitPerChannel: one reservation a channel");
  }
  auto state =
      std::make_shared<GroupState>(channels.size(), std::move(callbacks));
  for (size_t c = 0; c < channels.size(); ++c) {
    runtime::JobCallbacks per_channel{
        .on_complete =
            [state, c](absl::StatusOr<runtime::JobResult> result) {
              state->OnChannelComplete(c, std::move(result));
            },
        .on_partial = nullptr};
    absl::StatusOr<std::unique_ptr<runtime::Job>> job =
        engine.Submit(options, std::move(channels[c].samples),
                      std::move(channels[c].crop_edges), std::move(per_channel),
                      std::move(reservations[c]));
    if (!job.ok()) {
      // The jobs already accepted complete (CANCELLED) unreported: `armed`
      // stays false. The channels not submitted never complete.
      {
        absl::MutexLock lock(&state->mu);
        state->remaining -= static_cast<int>(channels.size() - c);
      }
      state->CancelAll();
      return job.status();
    }
    absl::MutexLock lock(&state->mu);
    state->jobs.push_back(std::shared_ptr<runtime::Job>(std::move(*job)));
  }
  bool report_now = false;
  {
    absl::MutexLock lock(&state->mu);
    state->armed = true;
    // Every job may already have completed before we armed the group.
    report_now = state->remaining == 0;
  }
  if (report_now) {
    // Re-run the last completion's report step.
    absl::StatusOr<runtime::JobResult> merged;
    {
      absl::MutexLock lock(&state->mu);
      if (!state->first_error.ok()) {
        merged = state->first_error;
      } else {
        std::vector<runtime::JobResult> all;
        for (auto& r : state->results) all.push_back(*std::move(r));
        merged = MergeChannelResults(std::move(all));
      }
    }
    state->callbacks.on_complete(std::move(merged));
  }
  return std::unique_ptr<runtime::Job>(new ChannelJobGroup(state));
}

}  // namespace diarization::server
