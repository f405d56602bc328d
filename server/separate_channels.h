// ChannelPolicy SEPARATE for DiarizeFile: each channel of a recording is
// diarized as its own engine job (the engine diarizes one signal), and the
// results are merged into one, speakers labelled by channel
// ("ch0:SPEAKER_00", "ch1:SPEAKER_00", ...) and the RTTM's channel column
// set (1-based, the NIST convention: channel index 0 is RTTM channel 1).
// Speaker hints apply to each channel on its own (docs/api.md).
#ifndef DIARIZATION_SERVER_SEPARATE_CHANNELS_H_
#define DIARIZATION_SERVER_SEPARATE_CHANNELS_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/audio/audio.h"
#include "engine/runtime/engine.h"

namespace diarization::server {

// "ch<channel>:" + label.
std::string ChannelLabel(int channel, const std::string& label);

// One result from per-channel results (index = channel): both views'
// segments relabelled and sorted by (start, end, speaker) as the pipeline
// sorts them, labels and centroids in channel order; audio_s the
// recording's (the longest channel), processing_s the longest job's, rtfx
// from those two, device the first channel's (devices joined with "," when
// they differ), tail the slowest job's.
runtime::JobResult MergeChannelResults(
    std::vector<runtime::JobResult> per_channel);

// RTTM text with each line's channel column (the third field) set from its
// speaker's "ch<c>:" prefix, as c + 1. Lines without the prefix are kept.
std::string RttmWithChannelColumn(const std::string& rttm);

// Decodes each channel of `bytes` on its own: a container file (re-opened
// per channel, FileDecoder::SelectChannel) when `encoded`, else raw audio in
// `raw` (its channel_index set per channel). Each decode is bounded by
// `max_duration_s`, `limits` and `control`. Each channel keeps its crop
// edges (audio::Waveform).
absl::StatusOr<std::vector<audio::Waveform>> DecodeEachChannel(
    std::span<const std::byte> bytes, bool encoded, audio::PcmFormat raw,
    int channel_count, const audio::DecodeLimits& limits, double max_duration_s,
    const audio::DecodeControl& control);

// Submits one job per channel (channels[c] with reservations[c]) and
// returns one handle over them: `callbacks.on_complete` is called once,
// with the merged result when every channel's job succeeded, or with the
// first error (the other jobs are then cancelled). Cancel cancels them all.
// Unlike Engine::Submit's, that call may run inside this one, when every
// job completed before it returned (DiarizeFileReactor allows it).
// On an error nothing is running (jobs already submitted are cancelled,
// and their completions are swallowed).
absl::StatusOr<std::unique_ptr<runtime::Job>> SubmitPerChannel(
    runtime::Engine& engine, const runtime::JobOptions& options,
    std::vector<audio::Waveform> channels, runtime::JobCallbacks callbacks,
    std::vector<runtime::Reservation> reservations);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_SEPARATE_CHANNELS_H_
