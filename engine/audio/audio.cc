// Raw PCM decoding (whole buffers and streams) and format validation.
#include "engine/audio/audio.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/audio/limits.h"
#include "engine/audio/pcm_convert.h"
#include "engine/audio/resampler.h"
#include "engine/common/status_macros.h"

namespace diarization::audio {

absl::Status ValidateRateAndChannels(int sample_rate_hz, int channel_count,
                                     const DecodeLimits& limits) {
  if (sample_rate_hz < limits.min_sample_rate_hz ||
      sample_rate_hz > limits.max_sample_rate_hz) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample rate ", sample_rate_hz, " Hz is outside the accepted range [",
        limits.min_sample_rate_hz, ", ", limits.max_sample_rate_hz, "] Hz"));
  }
  if (channel_count < 1 || channel_count > limits.max_channel_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel count ", channel_count, " is outside the accepted range [1, ",
        limits.max_channel_count, "]"));
  }
  return absl::OkStatus();
}

int64_t MaxFrames(const DecodeLimits& limits, int sample_rate_hz) {
  const double frames = std::floor(limits.max_duration_s * sample_rate_hz);
  if (!(frames > 0.0)) return 0;
  if (frames >= 9.0e18) return INT64_MAX;
  return static_cast<int64_t>(frames);
}

double ThreadCpuSeconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

absl::Status CheckDecodeControl(const DecodeControl& control,
                                double cpu_start_s) {
  if (control.cancelled && control.cancelled()) {
    return absl::CancelledError("decoding stopped: the caller left");
  }
  if (control.deadline != absl::InfiniteFuture() &&
      absl::Now() >= control.deadline) {
    return absl::DeadlineExceededError(
        "the deadline passed while the audio was being decoded");
  }
  if (control.max_cpu_s > 0.0 &&
      ThreadCpuSeconds() - cpu_start_s > control.max_cpu_s) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "decoding took more than the server's limit of ", control.max_cpu_s,
        " CPU seconds per request (max_decode_cpu_s); send a smaller file, "
        "a lower sample rate or fewer channels"));
  }
  return absl::OkStatus();
}

absl::Status TooLongError(int64_t frames, int sample_rate_hz,
                          const DecodeLimits& limits) {
  return absl::InvalidArgumentError(absl::StrCat(
      "audio is too long: ", static_cast<double>(frames) / sample_rate_hz,
      " s or more at ", sample_rate_hz, " Hz, the limit is ",
      limits.max_duration_s, " s"));
}

std::vector<std::string> AcceptedFormats() {
  return {"file: WAV (PCM 16/24/32-bit, float32, G.711 mu-law, A-law)",
          "file: FLAC",
          "file: OGG/Vorbis",
          "file: OGG/Opus",
          "file: MP3",
          "raw: LINEAR16",
          "raw: FLOAT32",
          "raw: MULAW",
          "raw: ALAW"};
}

absl::Status ValidatePcmFormat(const PcmFormat& format,
                               const DecodeLimits& limits) {
  switch (format.encoding) {
    case PcmEncoding::kLinear16:
    case PcmEncoding::kFloat32:
    case PcmEncoding::kMulaw:
    case PcmEncoding::kAlaw:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported PCM encoding ", static_cast<int>(format.encoding),
          "; supported raw encodings: ", kAcceptedRawEncodings));
  }
  RETURN_IF_ERROR(ValidateRateAndChannels(format.sample_rate_hz,
                                          format.channel_count, limits));
  return ValidateChannelIndex(format.channel_index, format.channel_count);
}

absl::Status ValidateChannelIndex(int channel_index, int channel_count) {
  if (channel_index == kDownmix ||
      (channel_index >= 0 && channel_index < channel_count)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "channel index ", channel_index, " is not a channel of this ",
      channel_count, "-channel audio (0 to ", channel_count - 1, ")"));
}

absl::Status FileDecoder::SelectChannel(int index) {
  RETURN_IF_ERROR(ValidateChannelIndex(index, header().channel_count));
  channel_index_ = index;
  return absl::OkStatus();
}

namespace {

class PcmStreamDecoder final : public StreamDecoder {
 public:
  PcmStreamDecoder(const PcmFormat& format, const DecodeLimits& limits,
                   std::unique_ptr<Resampler> resampler)
      : format_(format),
        frame_bytes_(BytesPerSample(format.encoding) * format.channel_count),
        max_frames_(MaxFrames(limits, format.sample_rate_hz)),
        limits_(limits),
        resampler_(std::move(resampler)) {}

  using StreamDecoder::Finish;
  using StreamDecoder::Push;

  absl::Status Push(std::span<const std::byte> bytes, std::vector<float>& out,
                    CropEdges* edges) override {
    if (finished_) {
      return absl::FailedPreconditionError("Push() after Finish()");
    }
    const size_t total_bytes = pending_.size() + bytes.size();
    const int64_t new_frames = static_cast<int64_t>(total_bytes / frame_bytes_);
    if (new_frames > max_frames_ - frames_) {
      return TooLongError(frames_ + new_frames, format_.sample_rate_hz,
                          limits_);
    }
    // Convert first, commit state only on success, so a failed Push leaves
    // the decoder as it was.
    std::vector<float> mono;
    size_t used = 0;  // bytes of `bytes` consumed into whole frames
    if (!pending_.empty()) {
      const size_t fill =
          std::min(frame_bytes_ - pending_.size(), bytes.size());
      if (pending_.size() + fill == frame_bytes_) {
        std::vector<std::byte> frame(pending_);
        frame.insert(frame.end(), bytes.begin(), bytes.begin() + fill);
        RETURN_IF_ERROR(
            AppendMonoFromPcm(frame, format_.encoding, format_.channel_count,
                              format_.channel_index, frames_, mono));
        used = fill;
      } else {
        // Still not a whole frame.
        pending_.insert(pending_.end(), bytes.begin(), bytes.end());
        return absl::OkStatus();
      }
    }
    const size_t whole = (bytes.size() - used) / frame_bytes_ * frame_bytes_;
    RETURN_IF_ERROR(
        AppendMonoFromPcm(bytes.subspan(used, whole), format_.encoding,
                          format_.channel_count, format_.channel_index,
                          frames_ + static_cast<int64_t>(mono.size()), mono));
    used += whole;
    pending_.assign(bytes.begin() + used, bytes.end());
    frames_ += static_cast<int64_t>(mono.size());
    return resampler_->Process(mono, out, edges);
  }

  absl::Status Finish(std::vector<float>& out, CropEdges* edges) override {
    if (finished_) {
      return absl::FailedPreconditionError("Finish() called twice");
    }
    finished_ = true;
    if (!pending_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "audio stream ended with a partial frame: ", pending_.size(),
          " bytes left over, a frame is ", frame_bytes_, " bytes (",
          format_.channel_count, " channel(s) of ",
          BytesPerSample(format_.encoding), "-byte samples)"));
    }
    return resampler_->Flush(out, edges);
  }

 private:
  const PcmFormat format_;
  const size_t frame_bytes_;
  const int64_t max_frames_;
  const DecodeLimits limits_;
  std::unique_ptr<Resampler> resampler_;
  std::vector<std::byte> pending_;  // a partial frame, < frame_bytes_
  int64_t frames_ = 0;              // whole input frames decoded
  bool finished_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StreamDecoder>> StreamDecoder::Create(
    const PcmFormat& format, const DecodeLimits& limits) {
  RETURN_IF_ERROR(ValidatePcmFormat(format, limits));
  ASSIGN_OR_RETURN(std::unique_ptr<Resampler> resampler,
                   Resampler::Create(format.sample_rate_hz));
  return std::unique_ptr<StreamDecoder>(
      new PcmStreamDecoder(format, limits, std::move(resampler)));
}

absl::StatusOr<Waveform> DecodePcm(std::span<const std::byte> bytes,
                                   const PcmFormat& format,
                                   const DecodeLimits& limits,
                                   const DecodeControl& control) {
  RETURN_IF_ERROR(ValidatePcmFormat(format, limits));
  if (bytes.empty()) {
    return absl::InvalidArgumentError("audio is empty (0 bytes)");
  }
  const size_t frame_bytes =
      BytesPerSample(format.encoding) * format.channel_count;
  if (bytes.size() % frame_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "raw PCM of ", bytes.size(), " bytes is not a whole number of ",
        frame_bytes, "-byte frames (", format.channel_count, " channel(s) of ",
        BytesPerSample(format.encoding),
        "-byte samples); the input is truncated or the format is wrong"));
  }
  // One code path with streaming: the same decoder, fed everything at once.
  ASSIGN_OR_RETURN(std::unique_ptr<StreamDecoder> decoder,
                   StreamDecoder::Create(format, limits));
  Waveform waveform;
  waveform.source_sample_rate_hz = format.sample_rate_hz;
  waveform.source_channel_count = format.channel_count;
  const double ratio =
      static_cast<double>(kSampleRateHz) / format.sample_rate_hz;
  waveform.samples.reserve(
      static_cast<size_t>(bytes.size() / frame_bytes * ratio) + 16);
  // In blocks, so that the control is checked while a large upload
  // resamples.
  constexpr size_t kBlockBytes = size_t{1} << 20;
  const double cpu_start = ThreadCpuSeconds();
  for (size_t at = 0; at < bytes.size(); at += kBlockBytes) {
    RETURN_IF_ERROR(CheckDecodeControl(control, cpu_start));
    RETURN_IF_ERROR(decoder->Push(
        bytes.subspan(at, std::min(kBlockBytes, bytes.size() - at)),
        waveform.samples, &waveform.crop_edges));
  }
  RETURN_IF_ERROR(decoder->Finish(waveform.samples, &waveform.crop_edges));
  return waveform;
}

}  // namespace diarization::audio
