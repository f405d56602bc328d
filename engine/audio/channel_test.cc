// Channel selection (SELECT_CHANNEL): one channel of raw audio, a stream
// or a file decodes exactly as that channel alone would (sox extracts it
// for the reference); an index the audio does not have is refused. The
// down-mix is covered by audio_test.
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

// A stereo call: channel 0 and channel 1 hold two different fixture
// speakers' recordings, 5 s each at `rate` Hz, 16-bit.
std::string StereoCall(int rate) {
  const std::string data = testing::TestDataDir() + "/findit-dia-parity/";
  const std::string left = TempPath("left.wav");
  const std::string right = TempPath("right.wav");
  const std::string both = TempPath(absl::StrCat("call", rate, ".wav"));
  Sox(absl::StrCat("-D ", data, "02_pyannote_sample/clip_16k.wav -r ", rate,
                   " -b 16 ", left, " trim 2 5"));
  Sox(absl::StrCat("-D ", data, "04_three_speaker/clip_16k.wav -r ", rate,
                   " -b 16 ", right, " trim 7 5"));
  Sox(absl::StrCat("-M ", left, " ", right, " ", both));
  return both;
}

std::vector<float> Decode(const std::vector<std::byte>& bytes,
                          const PcmFormat* raw = nullptr) {
  absl::StatusOr<Waveform> w =
      raw != nullptr ? DecodePcm(bytes, *raw) : DecodeFile(bytes);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? w->samples : std::vector<float>{};
}

TEST(SelectChannelTest, FileAndRawAndStreamGiveThatChannelAlone) {
  for (int rate : {16000, 8000}) {
    SCOPED_TRACE(rate);
    const std::string call = StereoCall(rate);
    for (int channel : {0, 1}) {
      SCOPED_TRACE(channel);
      // sox's extraction of the channel: the reference.
      const std::string alone = TempPath("alone.wav");
      const std::string alone_raw = TempPath("alone.raw");
      Sox(absl::StrCat(call, " ", alone, " remix ", channel + 1));
      Sox(absl::StrCat(call, " -t s16 ", alone_raw, " remix ", channel + 1));
      const std::vector<float> expected = Decode(ReadBytes(alone));
      ASSERT_EQ(expected.size(), 80000u);

      const std::vector<std::byte> file = ReadBytes(call);
      absl::StatusOr<std::unique_ptr<FileDecoder>> decoder =
          FileDecoder::Open(file);
      ASSERT_TRUE(decoder.ok()) << decoder.status();
      ASSERT_TRUE((*decoder)->SelectChannel(channel).ok());
      absl::StatusOr<Waveform> from_file = (*decoder)->Decode(1e9, {});
      ASSERT_TRUE(from_file.ok()) << from_file.status();
      EXPECT_EQ(from_file->samples, expected);

      // The same samples as raw interleaved LINEAR16.
      const std::string raw = TempPath("call.raw");
      Sox(absl::StrCat(call, " -t s16 ", raw));
      const std::vector<std::byte> bytes = ReadBytes(raw);
      const PcmFormat format{
          .sample_rate_hz = rate, .channel_count = 2, .channel_index = channel};
      EXPECT_EQ(Decode(bytes, &format), expected);

      // Streamed in chunks that split frames.
      absl::StatusOr<std::unique_ptr<StreamDecoder>> stream =
          StreamDecoder::Create(format);
      ASSERT_TRUE(stream.ok()) << stream.status();
      std::vector<float> streamed;
      for (size_t at = 0; at < bytes.size(); at += 1001) {
        const size_t n = std::min<size_t>(1001, bytes.size() - at);
        ASSERT_TRUE(
            (*stream)->Push(std::span(bytes).subspan(at, n), streamed).ok());
      }
      ASSERT_TRUE((*stream)->Finish(streamed).ok());
      EXPECT_EQ(streamed, expected);
      // And the channel alone is not the down-mix.
      EXPECT_NE(Decode(file), expected);
    }
  }
}

TEST(SelectChannelTest, AChannelTheAudioDoesNotHaveIsRefused) {
  const std::vector<std::byte> file = ReadBytes(StereoCall(16000));
  absl::StatusOr<std::unique_ptr<FileDecoder>> decoder =
      FileDecoder::Open(file);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  for (int bad : {2, 31, -2}) {
    const absl::Status s = (*decoder)->SelectChannel(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("2-channel audio (0 to 1)"));
  }
  const absl::Status s =
      ValidatePcmFormat({.channel_count = 2, .channel_index = 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidatePcmFormat({.channel_count = 2, .channel_index = 1}).ok());
  EXPECT_TRUE(
      ValidatePcmFormat({.channel_count = 2, .channel_index = kDownmix}).ok());
}

}  // namespace
}  // namespace diarization::audio
