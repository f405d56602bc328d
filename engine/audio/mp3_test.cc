// MP3 through libmpg123's API: files made in the test by Debian's lame
// decode to lame's own decode of them and to their PCM source within the
// codec's error; nothing is printed to stderr; bombs (a frame cut by the
// end of the file, an ID3 flood, hours of tiny frames, a length bound
// smaller than the stream) are INVALID_ARGUMENT, quickly, and the decode
// honours cancellation.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/audio/audio.h"
#include "engine/audio/audio_test_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::audio {
namespace {

using ::testing::HasSubstr;
using testing_files::ReadBytes;
using testing_files::TempPath;
// The shell runs lame and sox here.
constexpr auto Shell = testing_files::RunCommand;

// 8 s of the two-speaker fixture (from 3 s on) at `rate` Hz, 16-bit, `channels`
// channels (the second is the first reversed).
std::string SourceWav(int rate, int channels) {
  const std::string fixture = testing::TestDataDir() +
                              "/findit-dia-parity/02_pyannote_sample/"
                              "clip_16k.wav";
  const std::string mono = TempPath(absl::StrCat("m", rate, ".wav"));
  Shell(absl::StrCat("sox -D ", fixture, " -b 16 -r ", rate, " ", mono,
                     " trim 3 8"));
  if (channels == 1) return mono;
  const std::string reversed = TempPath(absl::StrCat("r", rate, ".wav"));
  const std::string stereo = TempPath(absl::StrCat("s", rate, ".wav"));
  Shell(absl::StrCat("sox ", mono, " ", reversed, " reverse"));
  Shell(absl::StrCat("sox -M ", mono, " ", reversed, " ", stereo));
  return stereo;
}

std::vector<float> DecodeOrDie(const std::vector<std::byte>& bytes) {
  absl::StatusOr<Waveform> w = DecodeFile(bytes);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? w->samples : std::vector<float>{};
}

double SnrDb(const std::vector<float>& reference, const std::vector<float>& x) {
  double signal = 0.0, noise = 0.0;
  for (size_t i = 0; i < reference.size() && i < x.size(); ++i) {
    signal += double{reference[i]} * reference[i];
    noise += (double{x[i]} - reference[i]) * (double{x[i]} - reference[i]);
  }
  return 10.0 * std::log10(signal / noise);
}

struct LameCase {
  int rate;
  int channels;
  const char* lame_args;
};

class LameMp3Test : public ::testing::TestWithParam<LameCase> {};

TEST_P(LameMp3Test, DecodesLikeLameAndNearTheSource) {
  const LameCase c = GetParam();
  const std::string source = SourceWav(c.rate, c.channels);
  const std::string mp3 = TempPath("x.mp3");
  const std::string by_lame = TempPath("x.lame.wav");
  Shell(absl::StrCat("lame --quiet ", c.lame_args, " ", source, " ", mp3));
  Shell(absl::StrCat("lame --quiet --decode ", mp3, " ", by_lame));
  const std::vector<std::byte> bytes = ReadBytes(mp3);
  absl::StatusOr<std::unique_ptr<FileDecoder>> decoder =
      FileDecoder::Open(bytes);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_EQ((*decoder)->header().container, "MP3");
  EXPECT_EQ((*decoder)->header().sample_rate_hz, c.rate);
  EXPECT_EQ((*decoder)->header().channel_count, c.channels);
  ASSERT_TRUE((*decoder)->header().duration_s.has_value());
  // Gapless: the encoder's delay and padding are removed (LAME tag; lame
  // writes none in frames too small for it, e.g. 16 kbit/s at 8 kHz).
  EXPECT_DOUBLE_EQ(*(*decoder)->header().duration_s, 8.0);
  absl::StatusOr<Waveform> ours = (*decoder)->Decode(1e9, {});
  ASSERT_TRUE(ours.ok()) << ours.status();
  const std::vector<float> lame = DecodeOrDie(ReadBytes(by_lame));
  const std::vector<float> pcm = DecodeOrDie(ReadBytes(source));
  ASSERT_EQ(ours->samples.size(), pcm.size());
  ASSERT_EQ(lame.size(), pcm.size());
  // lame's own decoder (16-bit output) and libmpg123 agree to about one
  // 16-bit step; the codec itself is lossy.
  EXPECT_GT(SnrDb(lame, ours->samples), 60.0);
  EXPECT_GT(SnrDb(pcm, ours->samples), 15.0);
}

INSTANTIATE_TEST_SUITE_P(Lame, LameMp3Test,
                         ::testing::Values(LameCase{16000, 1, "-b 64"},
                                           LameCase{44100, 2, "-V 4"},
                                           LameCase{8000, 1, "-b 32"}));

// Runs `body` with stderr redirected to a file; returns what was written.
std::string CaptureStderr(const std::function<void()>& body) {
  const std::string path = TempPath("stderr.txt");
  std::fflush(stderr);
  const int saved = dup(2);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  close(fd);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// One silent MPEG-2.5 Layer III frame: 8 kbit/s, 8000 Hz, mono, no CRC,
// 72 bytes, 576 samples (all-zero side information decodes to silence).
std::vector<std::byte> TinyFrames(size_t count) {
  std::vector<std::byte> frame(72, std::byte{0});
  frame[0] = std::byte{0xff};
  frame[1] = std::byte{0xe3};
  frame[2] = std::byte{0x18};
  frame[3] = std::byte{0xc0};
  std::vector<std::byte> out;
  out.reserve(count * frame.size());
  for (size_t i = 0; i < count; ++i)
    out.insert(out.end(), frame.begin(), frame.end());
  return out;
}

std::vector<std::byte> Id3Flood(size_t tags) {
  const char tag[10] = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 0};  // empty ID3v2.4
  std::vector<std::byte> out;
  for (size_t i = 0; i < tags; ++i) {
    const auto b = std::as_bytes(std::span(tag));
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

void ExpectInvalid(const absl::Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(what));
}

TEST(Mp3BombTest, RefusedQuicklyAndQuietly) {
  const std::string source = SourceWav(16000, 1);
  const std::string mp3 = TempPath("b.mp3");
  Shell(absl::StrCat("lame --quiet -b 64 ", source, " ", mp3));
  const std::vector<std::byte> whole = ReadBytes(mp3);
  const absl::Time start = absl::Now();
  const std::string printed = CaptureStderr([&] {
    // A frame cut by the end of the file.
    ExpectInvalid(
        DecodeFile(std::span(whole).subspan(0, whole.size() / 2 + 37)).status(),
        "truncated");
    // 100,000 ID3v2 tags and no audio; then the same before real frames.
    std::vector<std::byte> flood = Id3Flood(100000);
    ExpectInvalid(DecodeFile(flood).status(), "no MPEG audio frame");
    const std::vector<std::byte> frames = TinyFrames(100);
    flood.insert(flood.end(), frames.begin(), frames.end());
    absl::StatusOr<Waveform> after_flood = DecodeFile(flood);
    ASSERT_TRUE(after_flood.ok()) << after_flood.status();
    EXPECT_EQ(after_flood->samples.size(), 100u * 576 * 2);  // 8 -> 16 kHz
    // 21.6 MB of tiny frames: 6 hours, refused from the frame count at
    // Open, before decoding; and a smaller bound at Decode.
    const std::vector<std::byte> hours = TinyFrames(300000);
    ExpectInvalid(FileDecoder::Open(hours).status(), "too long");
    absl::StatusOr<std::unique_ptr<FileDecoder>> minutes =
        FileDecoder::Open(std::span(hours).subspan(0, 72 * 10000));
    ASSERT_TRUE(minutes.ok()) << minutes.status();
    EXPECT_DOUBLE_EQ(*(*minutes)->header().duration_s, 720.0);
    ExpectInvalid((*minutes)->Decode(60.0, {}).status(), "too long");
    // A frame header and zeros (no second frame to confirm the sync).
    std::vector<std::byte> lone(4000, std::byte{0});
    lone[0] = std::byte{0xff};
    lone[1] = std::byte{0xfb};
    lone[2] = std::byte{0x90};
    lone[3] = std::byte{0x64};
    const absl::Status s = DecodeFile(lone).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("MP3"));
  });
  EXPECT_TRUE(printed.empty())
      << printed.size() << " bytes on stderr: " << printed.substr(0, 300);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(Mp3BombTest, DecodeStopsOnCancellation) {
  const std::vector<std::byte> frames = TinyFrames(10000);  // 720 s
  absl::StatusOr<std::unique_ptr<FileDecoder>> decoder =
      FileDecoder::Open(frames);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::atomic<int> polls{0};
  const absl::Status s =
      (*decoder)
          ->Decode(1e9, {.cancelled = [&] { return ++polls > 3; }})
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(polls.load(), 4);
}

}  // namespace
}  // namespace diarization::audio
