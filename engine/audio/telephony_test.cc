// G.711 telephony audio: raw MULAW/ALAW and WAV files holding mu-law/A-law
// data, made by sox from a speech fixture. Each decode is checked against
// sox's own decode of the same bytes (exact) and against the PCM source
// (within the codec's quantisation error). Refusals of formats not accepted
// (MP4/M4A, AAC) name what is accepted.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/audio/audio.h"
#include "engine/audio/audio_test_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::audio {
namespace {

using ::testing::HasSubstr;
using testing_files::ReadBytes;
using testing_files::Sox;
using testing_files::TempPath;

// 6 s of the two-speaker fixture, 16-bit, at `rate` Hz and `channels`
// channels (channel 2 is the recording reversed, so the channels differ).
std::string SourceWav(int rate, int channels) {
  const std::string fixture =
      testing::TestDataDir() +
      "/findit-dia-parity/02_pyannote_sample/clip_16k.wav";
  const std::string mono = TempPath(absl::StrCat("src_", rate, ".wav"));
  Sox(absl::StrCat("-D ", fixture, " -b 16 -r ", rate, " ", mono, " trim 3 6"));
  if (channels == 1) return mono;
  const std::string reversed = TempPath(absl::StrCat("rev_", rate, ".wav"));
  Sox(absl::StrCat(mono, " ", reversed, " reverse"));
  const std::string stereo = TempPath(absl::StrCat("src_", rate, "_2.wav"));
  Sox(absl::StrCat("-M ", mono, " ", reversed, " ", stereo));
  return stereo;
}

std::vector<float> DecodeOrDie(const std::vector<std::byte>& bytes,
                               const PcmFormat* raw = nullptr) {
  absl::StatusOr<Waveform> w =
      raw != nullptr ? DecodePcm(bytes, *raw) : DecodeFile(bytes);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? w->samples : std::vector<float>{};
}

struct Codec {
  const char* sox_encoding;  // for a WAV file
  const char* sox_raw_type;  // headerless
  PcmEncoding encoding;
  // Largest quantisation error of the codec on 16-bit input: half the
  // widest step (mu-law: 1024 / 32768 at the top segment; A-law: 1024 too)
  // plus the 16-to-14/13-bit truncation.
  float max_error;
};

class TelephonyTest : public ::testing::TestWithParam<Codec> {};

TEST_P(TelephonyTest, RawAndWavDecodeLikeSoxWithinTheCodecsError) {
  const Codec codec = GetParam();
  for (int channels : {1, 2}) {
    SCOPED_TRACE(channels);
    // At 16 kHz nothing is resampled, so samples compare one to one.
    const std::string source = SourceWav(16000, channels);
    const std::string raw = TempPath("x.raw");
    const std::string wav = TempPath("x.wav");
    const std::string back = TempPath("back.wav");
    Sox(absl::StrCat("-D ", source, " -t ", codec.sox_raw_type, " ", raw));
    Sox(absl::StrCat("-D ", source, " -e ", codec.sox_encoding, " ", wav));
    // sox's decode of the raw bytes, as 16-bit PCM.
    Sox(absl::StrCat("-t ", codec.sox_raw_type, " -r 16000 -c ", channels, " ",
                     raw, " -b 16 -e signed-integer ", back));

    const PcmFormat format{.encoding = codec.encoding,
                           .sample_rate_hz = 16000,
                           .channel_count = channels};
    const std::vector<float> from_raw = DecodeOrDie(ReadBytes(raw), &format);
    const std::vector<float> from_wav = DecodeOrDie(ReadBytes(wav));
    const std::vector<float> by_sox = DecodeOrDie(ReadBytes(back));
    const std::vector<float> pcm = DecodeOrDie(ReadBytes(source));
    ASSERT_EQ(pcm.size(), 96000u);
    EXPECT_EQ(from_raw, by_sox);
    EXPECT_EQ(from_wav, by_sox);
    ASSERT_EQ(from_raw.size(), pcm.size());
    float worst = 0.0f;
    double signal = 0.0, noise = 0.0;
    for (size_t i = 0; i < pcm.size(); ++i) {
      const float e = std::abs(from_raw[i] - pcm[i]);
      worst = std::max(worst, e);
      signal += double{pcm[i]} * pcm[i];
      noise += double{e} * e;
    }
    EXPECT_LE(worst, codec.max_error);
    EXPECT_GT(10.0 * std::log10(signal / noise), 30.0);  // G.711: ~38 dB
  }
}

TEST_P(TelephonyTest, EightKilohertzStreamInOddChunksMatchesTheWavFile) {
  const Codec codec = GetParam();
  const std::string source = SourceWav(8000, 2);
  const std::string raw = TempPath("s.raw");
  const std::string wav = TempPath("s.wav");
  Sox(absl::StrCat("-D ", source, " -t ", codec.sox_raw_type, " ", raw));
  Sox(absl::StrCat("-D ", source, " -e ", codec.sox_encoding, " ", wav));
  const std::vector<std::byte> bytes = ReadBytes(raw);
  absl::StatusOr<std::unique_ptr<StreamDecoder>> decoder =
      StreamDecoder::Create({.encoding = codec.encoding,
                             .sample_rate_hz = 8000,
                             .channel_count = 2});
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::vector<float> streamed;
  for (size_t at = 0; at < bytes.size(); at += 777) {  // splits frames
    const size_t n = std::min<size_t>(777, bytes.size() - at);
    ASSERT_TRUE(
        (*decoder)->Push(std::span(bytes).subspan(at, n), streamed).ok());
  }
  ASSERT_TRUE((*decoder)->Finish(streamed).ok());
  const std::vector<float> from_wav = DecodeOrDie(ReadBytes(wav));
  EXPECT_EQ(streamed.size(), 96000u);
  EXPECT_EQ(streamed, from_wav);
  // A partial frame (one byte of a stereo frame) is refused.
  absl::StatusOr<Waveform> cut = DecodePcm(
      std::span(bytes).subspan(0, 3),
      {.encoding = codec.encoding, .sample_rate_hz = 8000, .channel_count = 2});
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cut.status().message(), HasSubstr("2-byte frames"));
}

INSTANTIATE_TEST_SUITE_P(
    G711, TelephonyTest,
    ::testing::Values(Codec{"u-law", "ul", PcmEncoding::kMulaw, 0.0160f},
                      Codec{"a-law", "al", PcmEncoding::kAlaw, 0.0160f}),
    [](const auto& info) {
      return std::string(info.param.sox_raw_type == std::string("ul") ? "Mulaw"
                                                                      : "Alaw");
    });

std::vector<std::byte> Bytes(std::string_view s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

TEST(RefusedFormatsTest, Mp4AndAacNameWhatIsAccepted) {
  std::string m4a(
      "\0\0\0\x20"
      "ftypM4A \0\0\0\0",
      16);
  m4a.resize(400, '\0');
  std::string adts("\xff\xf1\x50\x80\x02\x1f\xfc", 7);
  adts.resize(400, '\0');
  for (const auto& [bytes, what] :
       {std::pair{m4a, "MP4/M4A"}, std::pair{adts, "AAC (ADTS)"}}) {
    absl::StatusOr<Waveform> w = DecodeFile(Bytes(bytes));
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(w.status().message(), HasSubstr(what));
    EXPECT_THAT(w.status().message(), HasSubstr(kAcceptedContainers));
    EXPECT_THAT(w.status().message(), HasSubstr(kAcceptedRawEncodings));
  }
}

TEST(RefusedFormatsTest, AcceptedFormatsListsEveryEncoding) {
  const std::vector<std::string> formats = AcceptedFormats();
  for (const char* name : {"raw: LINEAR16", "raw: FLOAT32", "raw: MULAW",
                           "raw: ALAW", "file: FLAC", "file: OGG/Vorbis"}) {
    EXPECT_THAT(formats, ::testing::Contains(std::string(name)));
  }
}

}  // namespace
}  // namespace diarization::audio
