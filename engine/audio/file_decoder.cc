// Container decoding through libsndfile, from memory (sf_open_virtual).
#include <sndfile.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/audio/audio.h"
#include "engine/audio/limits.h"
#include "engine/audio/mp3_decoder.h"
#include "engine/audio/ogg_vorbis_headers.h"
#include "engine/audio/pcm_convert.h"
#include "engine/audio/resampler.h"
#include "engine/audio/sndfile_memory.h"
#include "engine/common/status_macros.h"

namespace diarization::audio {
namespace {

// Containers and encodings accepted (audio.h). Anything else libsndfile
// recognises (AIFF, AU, ADPCM, 8-bit ...) is refused: the service promises
// these, and a small set is a small attack surface.
bool IsSupported(int format, std::string* description) {
  const int container = format & SF_FORMAT_TYPEMASK;
  const int encoding = format & SF_FORMAT_SUBMASK;
  switch (container) {
    case SF_FORMAT_WAV:
    case SF_FORMAT_WAVEX:
    case SF_FORMAT_RF64:
      *description = "WAV";
      return encoding == SF_FORMAT_PCM_16 || encoding == SF_FORMAT_PCM_24 ||
             encoding == SF_FORMAT_PCM_32 || encoding == SF_FORMAT_FLOAT ||
             encoding == SF_FORMAT_ULAW || encoding == SF_FORMAT_ALAW;
    case SF_FORMAT_FLAC:
      *description = "FLAC";
      return true;
    case SF_FORMAT_OGG:
      *description = "OGG";
      return encoding == SF_FORMAT_VORBIS || encoding == SF_FORMAT_OPUS;
    default:
      *description = "an unsupported container";
      return false;
  }
}

std::string FormatName(int format) {
  SF_FORMAT_INFO info;
  std::memset(&info, 0, sizeof(info));
  info.format = format & SF_FORMAT_TYPEMASK;
  std::string container = "unknown container";
  if (sf_command(nullptr, SFC_GET_FORMAT_INFO, &info, sizeof(info)) == 0 &&
      info.name != nullptr) {
    container = info.name;
  }
  std::memset(&info, 0, sizeof(info));
  info.format = format & SF_FORMAT_SUBMASK;
  std::string encoding = "unknown encoding";
  if (sf_command(nullptr, SFC_GET_FORMAT_INFO, &info, sizeof(info)) == 0 &&
      info.name != nullptr) {
    encoding = info.name;
  }
  return absl::StrFormat("%s, %s (format 0x%08x)", container, encoding, format);
}

// libsndfile clamps a WAV "data" chunk that runs past the end of the file
// and decodes what is there; only its log says so ("data : <declared>
// (should be <present>)"). A cut upload must not pass for a shorter
// recording, so that is an error, except for the placeholder lengths (0,
// 0xFFFFFFFF) that streaming writers leave when they cannot seek back.
absl::Status CheckWavDataLength(SNDFILE* file) {
  std::vector<char> log(16384, '\0');
  sf_command(file, SFC_GET_LOG_INFO, log.data(),
             static_cast<int>(log.size()) - 1);
  const std::string_view text(log.data());
  size_t at = 0;
  while ((at = text.find("data : ", at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    unsigned long long declared = 0, present = 0;
    if (line_start &&
        std::sscanf(log.data() + at, "data : %llu (should be %llu)", &declared,
                    &present) == 2 &&
        declared > present && declared != 0 && declared != 0xFFFFFFFFull) {
      return absl::InvalidArgumentError(
          absl::StrCat("WAV audio is truncated: the data chunk announces ",
                       declared, " bytes, only ", present, " are present"));
    }
    at += 7;
  }
  return absl::OkStatus();
}

// The containers this service reads through libsndfile, recognised by
// their first bytes before libsndfile sees anything: libsndfile would
// otherwise also hand MP3 (to libmpg123, loudly and unbounded: MP3 goes to
// mp3_decoder.h instead), AIFF, AU, ... to their parsers.
absl::Status SniffContainer(std::span<const std::byte> bytes) {
  auto starts = [&](size_t at, std::string_view magic) {
    return bytes.size() >= at + magic.size() &&
           std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
  };
  if ((starts(0, "RIFF") || starts(0, "RF64")) && starts(8, "WAVE")) {
    return absl::OkStatus();
  }
  if (starts(0, "fLaC") || starts(0, "OggS")) return absl::OkStatus();
  std::string what = "its first bytes are not a WAV, FLAC or OGG header";
  const int b0 = bytes.size() >= 2 ? std::to_integer<int>(bytes[0]) : 0;
  const int b1 = bytes.size() >= 2 ? std::to_integer<int>(bytes[1]) : 0;
  if (starts(4, "ftyp")) {
    what = "it looks like MP4/M4A (AAC or ALAC), which is not supported";
  } else if (b0 == 0xff && (b1 & 0xf6) == 0xf0) {
    // ADTS: 12 sync bits and layer 00 (an MPEG audio frame has layer 01-11).
    what = "it looks like AAC (ADTS), which is not supported";
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot decode audio file (", bytes.size(), " bytes): ", what,
      "; supported files: ", kAcceptedContainers,
      "; or raw audio with its format: ", kAcceptedRawEncodings));
}

// An Ogg stream ends with a page flagged end-of-stream. A cut upload ends
// inside a page or without that page; libsndfile then decodes what is there
// and reports an unknown length, so check the page structure here.
absl::Status CheckOggComplete(std::span<const std::byte> bytes) {
  auto u8 = [&](size_t i) { return std::to_integer<unsigned>(bytes[i]); };
  size_t at = 0;
  bool end_of_stream = false;
  bool cut_page = false;
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (std::memcmp(bytes.data() + at, "OggS", std::min<size_t>(4, left)) !=
        0) {
      break;  // not a page: trailing bytes, judged below
    }
    if (left < 27 || left < 27 + size_t{u8(at + 26)}) {
      cut_page = true;
      break;
    }
    const unsigned segments = u8(at + 26);
    size_t page = 27 + segments;
    for (unsigned k = 0; k < segments; ++k) page += u8(at + 27 + k);
    if (page > left) {
      cut_page = true;
      break;
    }
    if ((u8(at + 5) & 0x04) != 0) end_of_stream = true;
    at += page;
  }
  if (end_of_stream && !cut_page) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "OGG audio is truncated: the file (", bytes.size(), " bytes) ",
      cut_page ? absl::StrCat("ends inside the page that starts at byte ", at)
               : std::string("has no end-of-stream page"),
      "; upload the whole file"));
}

class SndfileDecoder final : public FileDecoder {
 public:
  SndfileDecoder(std::span<const std::byte> bytes, const DecodeLimits& limits)
      : memory_{.bytes = bytes}, limits_(limits) {}

  absl::Status Open() {
    RETURN_IF_ERROR(SniffContainer(memory_.bytes));
    // Before libsndfile sees it: libsndfile leaks on a Vorbis stream whose
    // headers fail to parse (ogg_vorbis_headers.h).
    if (memory_.bytes.size() >= 4 &&
        std::memcmp(memory_.bytes.data(), "OggS", 4) == 0) {
      RETURN_IF_ERROR(CheckOggVorbisHeaders(memory_.bytes));
    }
    SF_VIRTUAL_IO io = MemoryFileIo();
    std::memset(&info_, 0, sizeof(info_));
    file_.reset(sf_open_virtual(&io, SFM_READ, &info_, &memory_));
    if (file_ == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot decode audio file (", memory_.bytes.size(), " bytes): ",
          sf_strerror(nullptr), "; supported files: ", kAcceptedContainers,
          "; or raw audio with its format: ", kAcceptedRawEncodings));
    }
    std::string container;
    if (!IsSupported(info_.format, &container)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported audio encoding: ", FormatName(info_.format),
                       "; supported files: ", kAcceptedContainers));
    }
    RETURN_IF_ERROR(
        ValidateRateAndChannels(info_.samplerate, info_.channels, limits_));
    if (container == "OGG") RETURN_IF_ERROR(CheckOggComplete(memory_.bytes));
    header_.container = container;
    header_.sample_rate_hz = info_.samplerate;
    header_.channel_count = info_.channels;
    header_.file_bytes = memory_.bytes.size();
    // libsndfile reports an unknown length as 0 (FLAC without a total
    // sample count) or SF_COUNT_MAX.
    known_frames_ = info_.frames > 0 && info_.frames < SF_COUNT_MAX / 2;
    if (known_frames_) {
      header_.duration_s = static_cast<double>(info_.frames) / info_.samplerate;
      if (info_.frames > MaxFrames(limits_, info_.samplerate)) {
        return TooLongError(info_.frames, info_.samplerate, limits_);
      }
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
    const int64_t max_frames = MaxFrames(limits, info_.samplerate);
    if (known_frames_ && info_.frames > max_frames) {
      return TooLongError(info_.frames, info_.samplerate, limits);
    }
    const std::string& container = header_.container;
    // libsndfile scales integer PCM to [-1, 1) by 1/32768 (16-bit),
    // 1/8388608 (24-bit), 1/2^31 (32-bit): exactly torchaudio's convention.
    sf_command(file_.get(), SFC_SET_NORM_FLOAT, nullptr, SF_TRUE);

    ASSIGN_OR_RETURN(std::unique_ptr<Resampler> resampler,
                     Resampler::Create(info_.samplerate));
    Waveform waveform;
    waveform.source_sample_rate_hz = info_.samplerate;
    waveform.source_channel_count = info_.channels;
    // Never more than the bound the caller admitted, whatever the header
    // announces (a few hundred bytes of FLAC can announce hours).
    const int64_t expected_frames =
        known_frames_ ? std::min<int64_t>(info_.frames, max_frames) : 0;
    if (expected_frames > 0) {
      waveform.samples.reserve(
          static_cast<size_t>(static_cast<double>(expected_frames) *
                                  kSampleRateHz / info_.samplerate +
                              16));
    }
    constexpr sf_count_t kBlockFrames = 8192;
    std::vector<float> interleaved(kBlockFrames * info_.channels);
    std::vector<float> mono;
    int64_t frames_read = 0;
    while (true) {
      RETURN_IF_ERROR(CheckDecodeControl(control, cpu_start));
      const sf_count_t n =
          sf_readf_float(file_.get(), interleaved.data(), kBlockFrames);
      if (n <= 0) break;
      if (n > max_frames - frames_read) {
        return TooLongError(frames_read + n, info_.samplerate, limits);
      }
      mono.clear();
      RETURN_IF_ERROR(AppendMonoFromInterleaved(
          std::span<const float>(interleaved.data(), n * info_.channels),
          info_.channels, channel_index_, frames_read, mono));
      frames_read += n;
      RETURN_IF_ERROR(
          resampler->Process(mono, waveform.samples, &waveform.crop_edges));
    }
    const int error = sf_error(file_.get());
    if (known_frames_ && frames_read < info_.frames) {
      return absl::InvalidArgumentError(absl::StrCat(
          container, " audio is truncated: the header announces ", info_.frames,
          " frames, only ", frames_read, " could be decoded",
          error != SF_ERR_NO_ERROR
              ? absl::StrCat(" (", sf_error_number(error), ")")
              : ""));
    }
    if (error != SF_ERR_NO_ERROR) {
      return absl::InvalidArgumentError(
          absl::StrCat(container, " audio is corrupt after ", frames_read,
                       " frames: ", sf_error_number(error)));
    }
    if (container == "WAV") RETURN_IF_ERROR(CheckWavDataLength(file_.get()));
    if (frames_read == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(container, " file contains no audio samples"));
    }
    RETURN_IF_ERROR(resampler->Flush(waveform.samples, &waveform.crop_edges));
    return waveform;
  }

 private:
  MemoryFile memory_;
  const DecodeLimits limits_;
  SF_INFO info_{};
  std::unique_ptr<SNDFILE, SndfileCloser> file_;
  FileHeader header_;
  bool known_frames_ = false;
  bool decoded_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FileDecoder>> FileDecoder::Open(
    std::span<const std::byte> bytes, const DecodeLimits& limits) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError("audio file is empty (0 bytes)");
  }
  if (LooksLikeMp3(bytes)) return OpenMp3(bytes, limits);
  auto decoder = std::make_unique<SndfileDecoder>(bytes, limits);
  RETURN_IF_ERROR(decoder->Open());
  return std::unique_ptr<FileDecoder>(std::move(decoder));
}

absl::StatusOr<Waveform> DecodeFile(std::span<const std::byte> bytes,
                                    const DecodeLimits& limits,
                                    const DecodeControl& control) {
  ASSIGN_OR_RETURN(std::unique_ptr<FileDecoder> decoder,
                   FileDecoder::Open(bytes, limits));
  return decoder->Decode(limits.max_duration_s, control);
}

absl::StatusOr<Waveform> DecodeFilePath(const std::string& path,
                                        const DecodeLimits& limits) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    return absl::NotFoundError(
        absl::StrCat("cannot open audio file '", path, "'"));
  }
  std::vector<char> contents((std::istreambuf_iterator<char>(stream)),
                             std::istreambuf_iterator<char>());
  if (stream.bad()) {
    return absl::DataLossError(
        absl::StrCat("error while reading audio file '", path, "'"));
  }
  absl::StatusOr<Waveform> waveform =
      DecodeFile(std::as_bytes(std::span<const char>(contents)), limits);
  if (!waveform.ok()) {
    return absl::Status(waveform.status().code(),
                        absl::StrCat(path, ": ", waveform.status().message()));
  }
  return waveform;
}

}  // namespace diarization::audio
