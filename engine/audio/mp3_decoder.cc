#include "engine/audio/mp3_decoder.h"

#include <mpg123.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/audio/limits.h"
#include "engine/audio/memory_reader.h"
#include "engine/audio/pcm_convert.h"
#include "engine/audio/resampler.h"
#include "engine/common/status_macros.h"

namespace diarization::audio {
namespace {

struct Mpg123Deleter {
  void operator()(mpg123_handle* handle) const {
    mpg123_close(handle);
    mpg123_delete(handle);
  }
};

// libmpg123's reader callbacks over a MemoryReader (POSIX read/lseek).
mpg123_ssize_t MemoryRead(void* user, void* destination, size_t count) {
  return static_cast<mpg123_ssize_t>(static_cast<MemoryReader*>(user)->Read(
      destination, static_cast<int64_t>(count)));
}

off_t MemorySeek(void* user, off_t offset, int whence) {
  return static_cast<off_t>(
      static_cast<MemoryReader*>(user)->Seek(offset, whence));
}

absl::Status Mp3Error(const char* what, mpg123_handle* handle) {
  return absl::InvalidArgumentError(
      absl::StrCat("MP3 audio ", what, ": ", mpg123_strerror(handle)));
}

class Mp3Decoder final : public FileDecoder {
 public:
  Mp3Decoder(std::span<const std::byte> bytes, const DecodeLimits& limits)
      : memory_{.bytes = bytes}, limits_(limits) {}

  absl::Status Open() {
    // A no-op since libmpg123 1.27, required before that.
    static std::once_flag once;
    std::call_once(once, [] { mpg123_init(); });
    int error = MPG123_OK;
    handle_.reset(mpg123_new(nullptr, &error));
    if (handle_ == nullptr) {
      return absl::InternalError(
          absl::StrCat("mpg123_new failed: ", mpg123_plain_strerror(error)));
    }
    mpg123_handle* h = handle_.get();
    // Quiet; float output at the stream's own rate (the resampler, not
    // libmpg123, changes rates); ID3v2 skipped, not parsed; one MPEG
    // format per stream (a "Frankenstein" stream that changes its header
    // midway ends there).
    mpg123_param(h, MPG123_ADD_FLAGS,
                 MPG123_QUIET | MPG123_FORCE_FLOAT | MPG123_SKIP_ID3V2 |
                     MPG123_NO_FRANKENSTEIN,
                 0.0);
    mpg123_param(h, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 0.0);
    mpg123_format_none(h);
    const long* rates = nullptr;
    size_t rate_count = 0;
    mpg123_rates(&rates, &rate_count);
    for (size_t i = 0; i < rate_count; ++i) {
      mpg123_format(h, rates[i], MPG123_MONO | MPG123_STEREO,
                    MPG123_ENC_FLOAT_32);
    }
    if (mpg123_replace_reader_handle(h, MemoryRead, MemorySeek, nullptr) !=
            MPG123_OK ||
        mpg123_open_handle(h, &memory_) != MPG123_OK) {
      return Mp3Error("cannot be opened", h);
    }
    long rate = 0;
    int channels = 0, encoding = 0;
    if (mpg123_getformat(h, &rate, &channels, &encoding) != MPG123_OK) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot decode audio file (", memory_.bytes.size(),
          " bytes) as MP3: no MPEG audio frame found (", mpg123_strerror(h),
          "); supported files: ", kAcceptedContainers));
    }
    if (encoding != MPG123_ENC_FLOAT_32) {
      return absl::InternalError("libmpg123 did not give float32 output");
    }
    RETURN_IF_ERROR(
        ValidateRateAndChannels(static_cast<int>(rate), channels, limits_));
    // The real length, from every frame header, not a tag's claim.
    if (mpg123_scan(h) != MPG123_OK) return Mp3Error("cannot be scanned", h);
    const off_t length = mpg123_length(h);
    if (length <= 0) {
      return absl::InvalidArgumentError("MP3 file contains no audio samples");
    }
    rate_ = static_cast<int>(rate);
    channels_ = channels;
    frames_ = static_cast<int64_t>(length);
    header_.container = "MP3";
    header_.sample_rate_hz = rate_;
    header_.channel_count = channels_;
    header_.duration_s = static_cast<double>(frames_) / rate_;
    header_.file_bytes = memory_.bytes.size();
    if (frames_ > MaxFrames(limits_, rate_)) {
      return TooLongError(frames_, rate_, limits_);
    }
    return absl::OkStatus();
  }

  const FileHeader& header() const override { return header_; }

  absl::StatusOr<Waveform> Decode(double max_duration_s,
                                  const DecodeControl& control) override {
    if (decoded_) {
      return absl::FailedPreconditionError("FileDecoder::Decode called twice");
    }
    decoded_ = true;
    const double cpu_start = ThreadCpuSeconds();
    DecodeLimits limits = limits_;
    limits.max_duration_s = std::min(limits.max_duration_s, max_duration_s);
    const int64_t max_frames = MaxFrames(limits, rate_);
    if (frames_ > max_frames) return TooLongError(frames_, rate_, limits);
    mpg123_handle* h = handle_.get();
    ASSIGN_OR_RETURN(std::unique_ptr<Resampler> resampler,
                     Resampler::Create(rate_));
    Waveform waveform;
    waveform.source_sample_rate_hz = rate_;
    waveform.source_channel_count = channels_;
    waveform.samples.reserve(static_cast<size_t>(
        static_cast<double>(frames_) * kSampleRateHz / rate_ + 16));
    constexpr size_t kBlockFrames = 8192;
    std::vector<float> interleaved(kBlockFrames * channels_);
    std::vector<float> mono;
    int64_t frames_read = 0;
    while (true) {
      RETURN_IF_ERROR(CheckDecodeControl(control, cpu_start));
      size_t bytes = 0;
      const int result =
          mpg123_read(h, reinterpret_cast<unsigned char*>(interleaved.data()),
                      interleaved.size() * sizeof(float), &bytes);
      const int64_t n =
          static_cast<int64_t>(bytes / (sizeof(float) * channels_));
      if (n > max_frames - frames_read) {
        return TooLongError(frames_read + n, rate_, limits);
      }
      if (n > 0) {
        mono.clear();
        RETURN_IF_ERROR(AppendMonoFromInterleaved(
            std::span<const float>(interleaved.data(), n * channels_),
            channels_, channel_index_, frames_read, mono));
        frames_read += n;
        RETURN_IF_ERROR(
            resampler->Process(mono, waveform.samples, &waveform.crop_edges));
      }
      if (result == MPG123_DONE) break;
      if (result == MPG123_NEW_FORMAT) {
        long rate = 0;
        int channels = 0, encoding = 0;
        mpg123_getformat(h, &rate, &channels, &encoding);
        if (rate != rate_ || channels != channels_) {
          return absl::InvalidArgumentError(absl::StrCat(
              "MP3 audio changes format after ", frames_read, " frames (",
              rate_, " Hz, ", channels_, " ch to ", rate, " Hz, ", channels,
              " ch); send one stream per file"));
        }
        continue;
      }
      if (result != MPG123_OK) {
        return absl::InvalidArgumentError(
            absl::StrCat("MP3 audio is corrupt after ", frames_read,
                         " frames: ", mpg123_strerror(h)));
      }
    }
    RETURN_IF_ERROR(CheckLastFrameComplete());
    if (frames_read < frames_) {
      return absl::InvalidArgumentError(
          absl::StrCat("MP3 audio is truncated: its frames announce ", frames_,
                       " samples, only ", frames_read, " could be decoded"));
    }
    if (frames_read == 0) {
      return absl::InvalidArgumentError("MP3 file contains no audio samples");
    }
    RETURN_IF_ERROR(resampler->Flush(waveform.samples, &waveform.crop_edges));
    return waveform;
  }

 private:
  // libmpg123 drops a frame cut by the end of the file without a word, so a
  // cut upload would pass for a shorter recording. After the last frame
  // comes the end of the file, or a tag (ID3v1, APE, junk) but not the
  // start of another frame.
  absl::Status CheckLastFrameComplete() {
    mpg123_handle* h = handle_.get();
    mpg123_frameinfo info;
    if (mpg123_info(h, &info) != MPG123_OK) return absl::OkStatus();
    const off_t size = static_cast<off_t>(memory_.bytes.size());
    const off_t end = mpg123_framepos(h) + info.framesize;
    if (end <= 0 || end >= size) return absl::OkStatus();
    if (LooksLikeMp3(memory_.bytes.subspan(static_cast<size_t>(end))) &&
        std::to_integer<int>(memory_.bytes[end]) == 0xff) {
      return absl::InvalidArgumentError(
          absl::StrCat("MP3 audio is truncated: the file (", size,
                       " bytes) ends inside the frame that starts at byte ",
                       end, "; upload the whole file"));
    }
    return absl::OkStatus();
  }

  MemoryReader memory_;
  const DecodeLimits limits_;
  std::unique_ptr<mpg123_handle, Mpg123Deleter> handle_;
  FileHeader header_;
  int rate_ = 0;
  int channels_ = 0;
  int64_t frames_ = 0;
  bool decoded_ = false;
};

}  // namespace

bool LooksLikeMp3(std::span<const std::byte> bytes) {
  if (bytes.size() >= 3 && std::memcmp(bytes.data(), "ID3", 3) == 0) {
    return true;
  }
  if (bytes.size() < 2) return false;
  const int b0 = std::to_integer<int>(bytes[0]);
  const int b1 = std::to_integer<int>(bytes[1]);
  return b0 == 0xff && (b1 & 0xe0) == 0xe0 && (b1 & 0x06) != 0;
}

absl::StatusOr<std::unique_ptr<FileDecoder>> OpenMp3(
    std::span<const std::byte> bytes, const DecodeLimits& limits) {
  auto decoder = std::make_unique<Mp3Decoder>(bytes, limits);
  RETURN_IF_ERROR(decoder->Open());
  return std::unique_ptr<FileDecoder>(std::move(decoder));
}

}  // namespace diarization::audio
