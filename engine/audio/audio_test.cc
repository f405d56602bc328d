#include "engine/audio/audio.h"

#include <ogg/ogg.h>
#include <sndfile.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/silent_flac.h"
#include "testing/test_data.h"

namespace diarization::audio {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> ReadBytes(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  EXPECT_TRUE(stream.good()) << "missing " << path;
  std::vector<char> chars((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

uint32_t U32(const std::vector<std::byte>& b, size_t at) {
  return std::to_integer<uint32_t>(b[at]) |
         std::to_integer<uint32_t>(b[at + 1]) << 8 |
         std::to_integer<uint32_t>(b[at + 2]) << 16 |
         std::to_integer<uint32_t>(b[at + 3]) << 24;
}
uint16_t U16(const std::vector<std::byte>& b, size_t at) {
  return static_cast<uint16_t>(std::to_integer<uint32_t>(b[at]) |
                               std::to_integer<uint32_t>(b[at + 1]) << 8);
}

// An independent WAV reader for the test: walks the RIFF chunks itself and
// converts the "data" chunk the way torchaudio does (int16 / 32768, float32
// as is). Mono only (the golden files are mono).
struct RawWav {
  int format_tag = 0;
  int channels = 0;
  int sample_rate = 0;
  int bits = 0;
  std::vector<float> samples;
};

RawWav ParseWav(const std::vector<std::byte>& b) {
  RawWav wav;
  EXPECT_GE(b.size(), 12u);
  EXPECT_EQ(std::memcmp(b.data(), "RIFF", 4), 0);
  EXPECT_EQ(std::memcmp(b.data() + 8, "WAVE", 4), 0);
  size_t at = 12;
  while (at + 8 <= b.size()) {
    const uint32_t size = U32(b, at + 4);
    if (std::memcmp(b.data() + at, "fmt ", 4) == 0) {
      wav.format_tag = U16(b, at + 8);
      wav.channels = U16(b, at + 10);
      wav.sample_rate = static_cast<int>(U32(b, at + 12));
      wav.bits = U16(b, at + 22);
    } else if (std::memcmp(b.data() + at, "data", 4) == 0) {
      const size_t begin = at + 8;
      if (wav.format_tag == 1 && wav.bits == 16) {
        for (size_t i = begin; i + 2 <= begin + size; i += 2) {
          wav.samples.push_back(static_cast<int16_t>(U16(b, i)) / 32768.0f);
        }
      } else if (wav.format_tag == 3 && wav.bits == 32) {
        for (size_t i = begin; i + 4 <= begin + size; i += 4) {
          wav.samples.push_back(std::bit_cast<float>(U32(b, i)));
        }
      } else {
        ADD_FAILURE() << "test reader: unexpected WAV format";
      }
    }
    at += 8 + size + (size & 1);
  }
  return wav;
}

std::string DataPath(const std::string& relative) {
  return testing::TestDataDir() + "/" + relative;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// Writes `frames` (interleaved doubles in [-1, 1]) with libsndfile, returns
// the file's bytes. Integer formats get full-scale ints (v * 2^31, clamped),
// so a 16-bit value v / 32768 is stored as v exactly (libsndfile's double
// writer would scale by 32767 instead).
std::vector<std::byte> WriteWithSndfile(const std::string& name, int format,
                                        int rate, int channels,
                                        const std::vector<double>& frames) {
  const std::string path = TempPath(name);
  SF_INFO info;
  std::memset(&info, 0, sizeof(info));
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  EXPECT_NE(file, nullptr) << sf_strerror(nullptr);
  if (file == nullptr) return {};
  const sf_count_t count = static_cast<sf_count_t>(frames.size() / channels);
  const int subtype = format & SF_FORMAT_SUBMASK;
  if (subtype == SF_FORMAT_FLOAT || subtype == SF_FORMAT_DOUBLE ||
      subtype == SF_FORMAT_VORBIS) {
    EXPECT_EQ(sf_writef_double(file, frames.data(), count), count);
  } else {
    std::vector<int> ints(frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      ints[i] =
          static_cast<int>(std::clamp(std::llround(frames[i] * 2147483648.0),
                                      static_cast<long long>(INT32_MIN),
                                      static_cast<long long>(INT32_MAX)));
    }
    EXPECT_EQ(sf_writef_int(file, ints.data(), count), count);
  }
  sf_close(file);
  return ReadBytes(path);
}

std::vector<double> Sine(double frequency_hz, double amplitude, int rate,
                         int frames) {
  std::vector<double> out(frames);
  for (int i = 0; i < frames; ++i) {
    out[i] =
        amplitude * std::sin(2.0 * std::numbers::pi * frequency_hz * i / rate);
  }
  return out;
}

// Amplitude and phase-free frequency check by correlating with sin/cos at
// `frequency_hz` over the middle of the signal (edges skipped: filter
// transients). Returns the fitted amplitude at that frequency.
double AmplitudeAt(const std::vector<float>& x, double frequency_hz, int rate) {
  const size_t skip = x.size() / 10;
  double s = 0.0, c = 0.0;
  size_t n = 0;
  for (size_t i = skip; i + skip < x.size(); ++i, ++n) {
    const double phase = 2.0 * std::numbers::pi * frequency_hz * i / rate;
    s += x[i] * std::sin(phase);
    c += x[i] * std::cos(phase);
  }
  return 2.0 * std::hypot(s, c) / n;
}

double Rms(const std::vector<float>& x) {
  const size_t skip = x.size() / 10;
  double sum = 0.0;
  size_t n = 0;
  for (size_t i = skip; i + skip < x.size(); ++i, ++n) sum += x[i] * x[i];
  return std::sqrt(sum / n);
}

std::vector<std::byte> Linear16Bytes(const std::vector<int16_t>& samples) {
  std::vector<std::byte> bytes;
  for (int16_t s : samples) {
    const uint16_t u = static_cast<uint16_t>(s);
    bytes.push_back(static_cast<std::byte>(u & 0xff));
    bytes.push_back(static_cast<std::byte>(u >> 8));
  }
  return bytes;
}

std::vector<std::byte> Float32Bytes(const std::vector<float>& samples) {
  std::vector<std::byte> bytes;
  for (float f : samples) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    for (int k = 0; k < 4; ++k) {
      bytes.push_back(static_cast<std::byte>((u >> (8 * k)) & 0xff));
    }
  }
  return bytes;
}

// ---------------------------------------------------------------------------
// Golden files.

class GoldenWavTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenWavTest, MatchesIndependentReadingExactly) {
  const std::string path = DataPath(GetParam());
  const RawWav raw = ParseWav(ReadBytes(path));
  ASSERT_EQ(raw.channels, 1);
  ASSERT_EQ(raw.sample_rate, 16000);
  ASSERT_FALSE(raw.samples.empty());
  absl::StatusOr<Waveform> waveform = DecodeFilePath(path);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->source_sample_rate_hz, 16000);
  EXPECT_EQ(waveform->source_channel_count, 1);
  ASSERT_EQ(waveform->samples.size(), raw.samples.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < raw.samples.size(); ++i) {
    if (waveform->samples[i] != raw.samples[i]) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u) << path;
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, GoldenWavTest,
    ::testing::Values("speakrs-fixtures/test.wav",
                      "speakrs-fixtures/test_3speakers.wav",
                      "speakrs-fixtures/test_single_speaker.wav",
                      "speakrs-fixtures/test_short.wav",
                      "pyannote-audio/sample/sample.wav",
                      "pyannote-audio/tests-data/dev00.wav",
                      "pyannote-audio/tests-data/tst01.wav",
                      "pyannote-audio/tests-data/empty.wav",
                      "findit-dia-parity/04_three_speaker/clip_16k.wav"));

TEST(GoldenFileTest, KnownLengths) {
  // Lengths from the WAV headers (data chunk bytes / bytes per sample).
  absl::StatusOr<Waveform> s16 =
      DecodeFilePath(DataPath("speakrs-fixtures/test.wav"));
  ASSERT_TRUE(s16.ok()) << s16.status();
  EXPECT_EQ(s16->samples.size(), 832494u / 2);
  absl::StatusOr<Waveform> f32 =
      DecodeFilePath(DataPath("pyannote-audio/tests-data/dev00.wav"));
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->samples.size(), 1920004u / 4);
  absl::StatusOr<Waveform> empty =
      DecodeFilePath(DataPath("pyannote-audio/tests-data/empty.wav"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->samples.size(), 16000u);
  EXPECT_DOUBLE_EQ(empty->duration_s(), 1.0);
}

// ---------------------------------------------------------------------------
// Files generated with libsndfile.

TEST(GeneratedFileTest, Wav24BitIsExact) {
  // 24-bit values v are decoded as v / 2^23.
  std::vector<double> frames;
  std::vector<float> expected;
  std::mt19937 rng(24);
  std::uniform_int_distribution<int> dist(-(1 << 23), (1 << 23) - 1);
  for (int i = 0; i < 4000; ++i) {
    const int v = dist(rng);
    frames.push_back(v / 8388608.0);
    expected.push_back(static_cast<float>(v / 8388608.0));
  }
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "pcm24.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 16000, 1, frames);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples, expected);
}

TEST(GeneratedFileTest, Wav32BitIntAndFloatAreExact) {
  const std::vector<double> frames = {0.0, 0.5, -0.25, -1.0, 0.125, 0.75};
  std::vector<float> expected(frames.begin(), frames.end());
  for (int format : {SF_FORMAT_PCM_32, SF_FORMAT_FLOAT}) {
    const std::vector<std::byte> bytes =
        WriteWithSndfile("pcm32.wav", SF_FORMAT_WAV | format, 16000, 1, frames);
    absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
    ASSERT_TRUE(waveform.ok()) << waveform.status();
    EXPECT_EQ(waveform->samples, expected) << format;
  }
}

TEST(GeneratedFileTest, FlacIsLossless) {
  std::vector<double> frames;
  std::vector<float> expected;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-32768, 32767);
  for (int i = 0; i < 20000; ++i) {
    const int v = dist(rng);
    frames.push_back(v / 32768.0);
    expected.push_back(v / 32768.0f);
  }
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "x.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, frames);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples, expected);
}

TEST(GeneratedFileTest, OggVorbisKeepsSine) {
  const std::vector<double> frames = Sine(440.0, 0.5, 16000, 32000);
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "x.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, frames);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples.size(), 32000u);
  // Lossy: the tone's amplitude within 2 %, and little energy elsewhere.
  EXPECT_NEAR(AmplitudeAt(waveform->samples, 440.0, 16000), 0.5, 0.01);
  EXPECT_NEAR(Rms(waveform->samples), 0.5 / std::sqrt(2.0), 0.01);
}

TEST(GeneratedFileTest, OggOpusKeepsSine) {
  const std::vector<double> frames = Sine(440.0, 0.5, 16000, 32000);
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "x.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 16000, 1, frames);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples.size(), 32000u);
  EXPECT_NEAR(AmplitudeAt(waveform->samples, 440.0, 16000), 0.5, 0.02);
}

TEST(GeneratedFileTest, StreamingWavPlaceholderLengthIsAccepted) {
  // Writers that cannot seek back leave 0xFFFFFFFF as RIFF and data sizes;
  // the samples that are there decode (not "truncated").
  std::vector<std::byte> wav =
      ReadBytes(DataPath("speakrs-fixtures/test_short.wav"));
  ASSERT_EQ(std::memcmp(wav.data() + 36, "data", 4), 0);
  for (size_t at : {4u, 40u}) {
    for (size_t k = 0; k < 4; ++k) wav[at + k] = std::byte{0xff};
  }
  absl::StatusOr<Waveform> waveform = DecodeFile(wav);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples.size(), (wav.size() - 44) / 2);
}

TEST(GeneratedFileTest, StereoIsAveraged) {
  std::vector<double> frames;
  std::vector<float> expected;
  for (int i = 0; i < 1000; ++i) {
    const int left = (i * 37) % 2000 - 1000;
    const int right = (i * 91) % 3000 - 1500;
    frames.push_back(left / 32768.0);
    frames.push_back(right / 32768.0);
    expected.push_back(static_cast<float>((left + right) / 65536.0));
  }
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "stereo.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 2, frames);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->source_channel_count, 2);
  EXPECT_EQ(waveform->samples, expected);
}

class ResampleTest : public ::testing::TestWithParam<int> {};

TEST_P(ResampleTest, SineKeepsFrequencyAndAmplitude) {
  const int rate = GetParam();
  const int frames = rate * 3;  // 3 s
  // 1 kHz tone (under 8 kHz's Nyquist), plus a 3 kHz one.
  std::vector<double> signal = Sine(1000.0, 0.4, rate, frames);
  const std::vector<double> second = Sine(3000.0, 0.2, rate, frames);
  for (int i = 0; i < frames; ++i) signal[i] += second[i];
  const std::vector<std::byte> bytes = WriteWithSndfile(
      "rate.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, 1, signal);
  absl::StatusOr<Waveform> waveform = DecodeFile(bytes);
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->source_sample_rate_hz, rate);
  // 3 s in, 3 s out (torchaudio's count, ceil(16000 · N / rate)).
  EXPECT_EQ(waveform->samples.size(), 48000u);
  // torchaudio's kernel (6 zero crossings, Hann, rolloff 0.99) is short: from
  // 8 kHz its transition band starts below 3 kHz, which costs the 3 kHz tone
  // 1.5 % of its amplitude; from the higher rates both tones are in the
  // passband.
  const double tolerance = rate == 8000 ? 5e-3 : 1e-3;
  EXPECT_NEAR(AmplitudeAt(waveform->samples, 1000.0, 16000), 0.4, tolerance);
  EXPECT_NEAR(AmplitudeAt(waveform->samples, 3000.0, 16000), 0.2, tolerance);
  // Nothing else: the total power is the two tones'.
  EXPECT_NEAR(Rms(waveform->samples), std::sqrt((0.16 + 0.04) / 2.0),
              tolerance);
  // Aligned in time (linear phase, delay removed): sample-wise close to the
  // ideal 16 kHz signal in the middle.
  double max_error = 0.0;
  for (size_t i = 1600; i + 1600 < waveform->samples.size(); ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    const double ideal = 0.4 * std::sin(2.0 * std::numbers::pi * 1000.0 * t) +
                         0.2 * std::sin(2.0 * std::numbers::pi * 3000.0 * t);
    max_error = std::max(max_error, std::abs(waveform->samples[i] - ideal));
  }
  EXPECT_LT(max_error, tolerance);
}

INSTANTIATE_TEST_SUITE_P(Rates, ResampleTest,
                         ::testing::Values(8000, 22050, 44100, 48000));

// ---------------------------------------------------------------------------
// Raw PCM.

TEST(DecodePcmTest, Linear16ByConstruction) {
  const std::vector<int16_t> samples = {0, 1, -1, 32767, -32768, 16384};
  absl::StatusOr<Waveform> waveform =
      DecodePcm(Linear16Bytes(samples), PcmFormat{});
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples,
            (std::vector<float>{0.0f, 1.0f / 32768, -1.0f / 32768,
                                32767.0f / 32768, -1.0f, 0.5f}));
}

TEST(DecodePcmTest, Float32StereoAveraged) {
  const std::vector<float> interleaved = {0.5f, 0.25f, -1.0f,
                                          1.0f, 0.0f,  0.75f};
  absl::StatusOr<Waveform> waveform = DecodePcm(
      Float32Bytes(interleaved), PcmFormat{.encoding = PcmEncoding::kFloat32,
                                           .sample_rate_hz = 16000,
                                           .channel_count = 2});
  ASSERT_TRUE(waveform.ok()) << waveform.status();
  EXPECT_EQ(waveform->samples, (std::vector<float>{0.375f, 0.0f, 0.375f}));
  EXPECT_EQ(waveform->source_channel_count, 2);
}

TEST(DecodePcmTest, SameAsWavContainerForGoldenFile) {
  // The data chunk of a golden s16 file, sent as raw LINEAR16, decodes to
  // the same samples as the file.
  const std::vector<std::byte> file =
      ReadBytes(DataPath("speakrs-fixtures/test_short.wav"));
  const std::span<const std::byte> data =
      std::span<const std::byte>(file).subspan(44);
  ASSERT_EQ(U32(file, 40), data.size());
  absl::StatusOr<Waveform> raw = DecodePcm(data, PcmFormat{});
  absl::StatusOr<Waveform> container = DecodeFile(file);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_TRUE(container.ok()) << container.status();
  EXPECT_EQ(raw->samples, container->samples);
}

// ---------------------------------------------------------------------------
// Streaming.

std::vector<float> DecodeInChunks(const std::vector<std::byte>& bytes,
                                  const PcmFormat& format, uint32_t seed) {
  absl::StatusOr<std::unique_ptr<StreamDecoder>> decoder =
      StreamDecoder::Create(format);
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> chunk(0, 5000);
  std::vector<float> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min(chunk(rng), bytes.size() - at);
    EXPECT_TRUE((*decoder)->Push(std::span(bytes).subspan(at, n), out).ok());
    at += n;
  }
  EXPECT_TRUE((*decoder)->Finish(out).ok());
  return out;
}

TEST(StreamDecoderTest, SixteenKilohertzIsBitExact) {
  const std::vector<std::byte> file =
      ReadBytes(DataPath("speakrs-fixtures/test.wav"));
  const std::vector<std::byte> data(file.begin() + 44, file.end());
  absl::StatusOr<Waveform> whole = DecodePcm(data, PcmFormat{});
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (uint32_t seed : {1u, 2u, 3u}) {
    EXPECT_EQ(DecodeInChunks(data, PcmFormat{}, seed), whole->samples);
  }
}

TEST(StreamDecoderTest, StereoFloatChunksSplitFrames) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> interleaved(2 * 30011);
  for (float& x : interleaved) x = dist(rng);
  const PcmFormat format{.encoding = PcmEncoding::kFloat32,
                         .sample_rate_hz = 16000,
                         .channel_count = 2};
  const std::vector<std::byte> bytes = Float32Bytes(interleaved);
  absl::StatusOr<Waveform> whole = DecodePcm(bytes, format);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->samples.size(), 30011u);
  EXPECT_EQ(DecodeInChunks(bytes, format, 9), whole->samples);
}

TEST(StreamDecoderTest, ResampledStreamMatchesWhole) {
  const PcmFormat format{.encoding = PcmEncoding::kLinear16,
                         .sample_rate_hz = 44100,
                         .channel_count = 1};
  std::vector<int16_t> samples(44100 * 4);
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 2000.0);
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i] = static_cast<int16_t>(std::clamp(
        8000.0 * std::sin(2.0 * std::numbers::pi * 440.0 * i / 44100.0) +
            noise(rng),
        -32768.0, 32767.0));
  }
  const std::vector<std::byte> bytes = Linear16Bytes(samples);
  absl::StatusOr<Waveform> whole = DecodePcm(bytes, format);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->samples.size(), 64000u);
  const std::vector<float> streamed = DecodeInChunks(bytes, format, 4);
  ASSERT_EQ(streamed.size(), whole->samples.size());
  // The resampler's output does not depend on how the input is cut up: each
  // output sample is one sum over the same inputs in the same order.
  EXPECT_EQ(streamed, whole->samples);
}

// ---------------------------------------------------------------------------
// Errors.

void ExpectInvalid(const absl::Status& status, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(message));
}

TEST(AudioErrorTest, EmptyInput) {
  ExpectInvalid(DecodeFile({}).status(), "empty");
  ExpectInvalid(DecodePcm({}, PcmFormat{}).status(), "empty");
}

TEST(AudioErrorTest, GarbageIsNotAContainer) {
  std::vector<std::byte> garbage(1000);
  for (size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<std::byte>(i * 31 + 7);
  }
  ExpectInvalid(DecodeFile(garbage).status(), "cannot decode audio file");
}

TEST(AudioErrorTest, TruncatedContainers) {
  const std::vector<std::byte> wav =
      ReadBytes(DataPath("speakrs-fixtures/test_short.wav"));
  // Cut inside the header.
  ExpectInvalid(DecodeFile(std::span(wav).subspan(0, 30)).status(),
                "cannot decode");
  // Cut inside the data: the header announces more than there is.
  ExpectInvalid(DecodeFile(std::span(wav).subspan(0, wav.size() / 2)).status(),
                "truncated");
  const std::vector<std::byte> flac =
      WriteWithSndfile("t.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1,
                       Sine(300.0, 0.3, 16000, 64000));
  ExpectInvalid(
      DecodeFile(std::span(flac).subspan(0, flac.size() / 2)).status(),
      "truncated");
}

TEST(AudioErrorTest, UnsupportedEncodings) {
  const std::vector<double> frames = Sine(300.0, 0.3, 16000, 1600);
  ExpectInvalid(DecodeFile(WriteWithSndfile("adpcm.wav",
                                            SF_FORMAT_WAV | SF_FORMAT_IMA_ADPCM,
                                            16000, 1, frames))
                    .status(),
                "unsupported audio encoding");
  ExpectInvalid(
      DecodeFile(WriteWithSndfile("u8.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8,
                                  16000, 1, frames))
          .status(),
      "unsupported audio encoding");
  ExpectInvalid(
      DecodeFile(WriteWithSndfile("x.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16,
                                  16000, 1, frames))
          .status(),
      "not a WAV, FLAC or OGG header");
  ExpectInvalid(DecodePcm(Linear16Bytes({1, 2}),
                          PcmFormat{.encoding = static_cast<PcmEncoding>(7)})
                    .status(),
                "unsupported PCM encoding");
}

TEST(AudioErrorTest, AbsurdSampleRatesAndChannels) {
  const std::vector<double> frames = Sine(300.0, 0.3, 4000, 400);
  ExpectInvalid(
      DecodeFile(WriteWithSndfile("4k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16,
                                  4000, 1, frames))
          .status(),
      "sample rate 4000 Hz is outside the accepted range");
  for (int rate : {0, -16000, 1, 7999, 192001, 1000000000}) {
    ExpectInvalid(ValidatePcmFormat({.sample_rate_hz = rate}), "sample rate");
    ExpectInvalid(StreamDecoder::Create({.sample_rate_hz = rate}).status(),
                  "sample rate");
  }
  for (int channels : {0, -1, 33}) {
    ExpectInvalid(ValidatePcmFormat({.channel_count = channels}),
                  "channel count");
    ExpectInvalid(
        DecodePcm(Linear16Bytes({1, 2}), {.channel_count = channels}).status(),
        "channel count");
  }
  EXPECT_TRUE(ValidatePcmFormat({.sample_rate_hz = 8000}).ok());
  EXPECT_TRUE(ValidatePcmFormat({.sample_rate_hz = 192000}).ok());
  EXPECT_TRUE(ValidatePcmFormat({.channel_count = 32}).ok());
}

TEST(AudioErrorTest, NonFiniteSamples) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const PcmFormat format{.encoding = PcmEncoding::kFloat32};
  ExpectInvalid(DecodePcm(Float32Bytes({0.0f, nan, 0.5f}), format).status(),
                "frame 1, channel 0 is NaN");
  ExpectInvalid(DecodePcm(Float32Bytes({0.0f, 0.1f, -inf}), format).status(),
                "frame 2, channel 0 is infinite");
  // In a float WAV file.
  const std::vector<std::byte> wav = WriteWithSndfile(
      "nan.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1,
      {0.0, 0.25, std::numeric_limits<double>::quiet_NaN(), 0.0});
  ExpectInvalid(DecodeFile(wav).status(), "NaN");
  // In a stream, the failed Push leaves the decoder usable.
  absl::StatusOr<std::unique_ptr<StreamDecoder>> decoder =
      StreamDecoder::Create(format);
  ASSERT_TRUE(decoder.ok());
  std::vector<float> out;
  ExpectInvalid((*decoder)->Push(Float32Bytes({0.5f, inf}), out), "infinite");
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE((*decoder)->Push(Float32Bytes({0.5f}), out).ok());
  ASSERT_TRUE((*decoder)->Finish(out).ok());
  EXPECT_EQ(out, std::vector<float>{0.5f});
}

TEST(AudioErrorTest, TooLong) {
  const DecodeLimits limits{.max_duration_s = 0.5};
  // 0.5 s at 16 kHz is accepted, one more frame is not.
  EXPECT_TRUE(
      DecodePcm(std::vector<std::byte>(8000 * 2), PcmFormat{}, limits).ok());
  ExpectInvalid(
      DecodePcm(std::vector<std::byte>(8001 * 2), PcmFormat{}, limits).status(),
      "too long");
  const std::vector<std::byte> wav =
      ReadBytes(DataPath("speakrs-fixtures/test_short.wav"));
  ExpectInvalid(DecodeFile(wav, limits).status(), "too long");
  absl::StatusOr<std::unique_ptr<StreamDecoder>> decoder =
      StreamDecoder::Create(PcmFormat{}, limits);
  ASSERT_TRUE(decoder.ok());
  std::vector<float> out;
  ASSERT_TRUE((*decoder)->Push(std::vector<std::byte>(6000 * 2), out).ok());
  ExpectInvalid((*decoder)->Push(std::vector<std::byte>(2001 * 2), out),
                "too long");
  ASSERT_TRUE((*decoder)->Push(std::vector<std::byte>(2000 * 2), out).ok());
  EXPECT_EQ(out.size(), 8000u);
}

TEST(AudioErrorTest, PartialFrames) {
  ExpectInvalid(
      DecodePcm(std::vector<std::byte>(7), PcmFormat{.channel_count = 2})
          .status(),
      "not a whole number of 4-byte frames");
  absl::StatusOr<std::unique_ptr<StreamDecoder>> decoder =
      StreamDecoder::Create(PcmFormat{});
  ASSERT_TRUE(decoder.ok());
  std::vector<float> out;
  ASSERT_TRUE((*decoder)->Push(std::vector<std::byte>(3), out).ok());
  EXPECT_EQ(out.size(), 1u);
  ExpectInvalid((*decoder)->Finish(out), "partial frame: 1 bytes left over");
  EXPECT_EQ((*decoder)->Push(std::vector<std::byte>(2), out).code(),
            absl::StatusCode::kFailedPrecondition);
}

// MP3 written by libsndfile (through LAME) is read by libmpg123's own API,
// not by libsndfile (mp3_test covers MP3 in depth).
TEST(GeneratedFileTest, Mp3FromLibsndfileGoesToLibmpg123) {
  const std::vector<std::byte> mp3 =
      WriteWithSndfile("x.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III,
                       16000, 1, Sine(300.0, 0.3, 16000, 16000));
  ASSERT_GT(mp3.size(), 100u);
  absl::StatusOr<std::unique_ptr<FileDecoder>> d = FileDecoder::Open(mp3);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->header().container, "MP3");
  absl::StatusOr<Waveform> w = (*d)->Decode(60.0, {});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_NEAR(AmplitudeAt(w->samples, 300.0, 16000), 0.3, 0.03);
}

// Corrupts one byte of an Ogg file's content at `at` and recomputes the CRC
// of the page holding it, so the page is intact and its packet is not.
void CorruptOggByte(std::vector<std::byte>& ogg, size_t at, std::byte value) {
  size_t page = 0;
  for (size_t p = 0; p + 27 <= at; ++p) {
    if (std::memcmp(ogg.data() + p, "OggS", 4) == 0) page = p;
  }
  const size_t segments = std::to_integer<size_t>(ogg[page + 26]);
  size_t body = 0;
  for (size_t k = 0; k < segments; ++k) {
    body += std::to_integer<size_t>(ogg[page + 27 + k]);
  }
  ogg[at] = value;
  ogg_page og;
  og.header = reinterpret_cast<unsigned char*>(ogg.data() + page);
  og.header_len = static_cast<long>(27 + segments);
  og.body = og.header + og.header_len;
  og.body_len = static_cast<long>(body);
  ogg_page_checksum_set(&og);
}

// The first `what` in `v` at or after `from`; npos when there is none.
size_t Find(const std::vector<std::byte>& v, std::string_view what,
            size_t from = 0) {
  const auto it = std::search(
      v.begin() + std::min(from, v.size()), v.end(), what.begin(), what.end(),
      [](std::byte b, char c) { return std::to_integer<char>(b) == c; });
  return it == v.end() ? std::string::npos : size_t(it - v.begin());
}

// libsndfile leaks the vorbis_info it set up when a Vorbis header fails to
// parse (ogg_vorbis_headers.h); such files are refused before it opens
// them, with this project's message (the fuzz test checks the leak is gone).
TEST(AudioErrorTest, OggVorbisWithABadHeaderIsRefusedBeforeLibsndfile) {
  const std::vector<std::byte> ogg =
      WriteWithSndfile("h.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1,
                       Sine(300.0, 0.3, 16000, 16000));
  ASSERT_TRUE(DecodeFile(ogg).ok());
  // The identification header's channel count (after 0x01 "vorbis" and a
  // 4-byte version) set to 0.
  const size_t id = Find(ogg, "\x01vorbis");
  ASSERT_NE(id, std::string::npos);
  std::vector<std::byte> bad = ogg;
  CorruptOggByte(bad, id + 11, std::byte{0});
  ExpectInvalid(
      DecodeFile(bad).status(),
      "OGG/Vorbis audio is malformed: Vorbis header 1 does not parse");
  // The setup header's first codebook sync pattern ("BCV") broken.
  const size_t setup = Find(ogg, "\x05vorbis");
  ASSERT_NE(setup, std::string::npos);
  bad = ogg;
  CorruptOggByte(bad, setup + 8, std::byte{'X'});  // "\x05vorbis", count, "BCV"
  ExpectInvalid(
      DecodeFile(bad).status(),
      "OGG/Vorbis audio is malformed: Vorbis header 3 does not parse");
  // Cut inside the headers' pages (the comment and setup headers share the
  // second page): what is missing is said.
  ExpectInvalid(DecodeFile(std::span(ogg).subspan(0, setup)).status(),
                "the file ends after 1 of its 3 Vorbis headers");
}

// A cut OGG has no known length (libsndfile reports SF_COUNT_MAX frames);
// it is "truncated", not "too long".
TEST(AudioErrorTest, TruncatedOggIsTruncatedNotTooLong) {
  const std::vector<std::byte> ogg =
      WriteWithSndfile("cut.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1,
                       Sine(300.0, 0.3, 16000, 16000 * 20));
  ASSERT_TRUE(DecodeFile(ogg).ok());
  for (size_t keep : {ogg.size() / 3, ogg.size() / 2, ogg.size() - 1}) {
    SCOPED_TRACE(keep);
    const absl::Status s = DecodeFile(std::span(ogg).subspan(0, keep)).status();
    ExpectInvalid(s, "OGG audio is truncated");
    EXPECT_THAT(s.message(), ::testing::Not(::testing::HasSubstr("too long")));
  }
  // Cut exactly between two pages: every page is whole, the end-of-stream
  // page is missing.
  const size_t boundary = Find(ogg, "OggS", ogg.size() / 2);
  ASSERT_NE(boundary, std::string::npos);
  ExpectInvalid(DecodeFile(std::span(ogg).subspan(0, boundary)).status(),
                "no end-of-stream page");
}

TEST(SilentFlacTest, DecodesToTheSilenceItAnnounces) {
  const std::string flac =
      diarization::testing::SilentFlac({.sample_rate_hz = 48000,
                                        .channel_count = 2,
                                        .seconds = 3.5,
                                        .block_size = 4096});
  absl::StatusOr<Waveform> w = DecodeFile(std::as_bytes(std::span(flac)));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->samples.size(), 56000u);
  EXPECT_EQ(w->source_sample_rate_hz, 48000);
  EXPECT_EQ(w->source_channel_count, 2);
  EXPECT_TRUE(std::all_of(w->samples.begin(), w->samples.end(),
                          [](float v) { return v == 0.0f; }));
}

// The decoder bomb of issue 13: 1.4 MB that decode to 14000 s of
// 192 kHz × 8-channel audio. Its header is refused before decoding; without
// a length in the header, decoding stops at the caller's bound, its
// deadline, its CPU budget or its cancellation within one block.
TEST(DecoderBombTest, HeaderTellsTheDurationBeforeDecoding) {
  const std::string bomb = diarization::testing::SilentFlac({});
  EXPECT_LT(bomb.size(), 1500000u);
  const auto bytes = std::as_bytes(std::span(bomb));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<FileDecoder>> d =
      FileDecoder::Open(bytes, DecodeLimits{.max_duration_s = 20000});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->header().container, "FLAC");
  EXPECT_EQ((*d)->header().sample_rate_hz, 192000);
  EXPECT_EQ((*d)->header().channel_count, 8);
  ASSERT_TRUE((*d)->header().duration_s.has_value());
  EXPECT_NEAR(*(*d)->header().duration_s, 14000.0, 0.01);
  // Announced longer than the caller admits: refused without decoding.
  ExpectInvalid((*d)->Decode(60.0, {}).status(), "too long");
  ExpectInvalid(
      FileDecoder::Open(bytes, DecodeLimits{.max_duration_s = 3600}).status(),
      "too long");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(DecoderBombTest, UnannouncedLengthStopsAtEveryBound) {
  const std::string bomb =
      diarization::testing::SilentFlac({.announce_length = false});
  const auto bytes = std::as_bytes(std::span(bomb));
  auto open = [&] {
    absl::StatusOr<std::unique_ptr<FileDecoder>> d = FileDecoder::Open(bytes);
    EXPECT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE((*d)->header().duration_s.has_value());
    return *std::move(d);
  };
  // The caller's duration bound: 2 s of 192 kHz × 8 ch.
  absl::Time start = absl::Now();
  ExpectInvalid(open()->Decode(2.0, {}).status(), "too long");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Cancellation, polled every block.
  std::atomic<int> polls{0};
  absl::Status s =
      open()->Decode(1e9, {.cancelled = [&] { return ++polls > 3; }}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(polls.load(), 4);
  // The deadline.
  start = absl::Now();
  s = open()
          ->Decode(1e9, {.deadline = absl::Now() + absl::Milliseconds(200)})
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // The CPU budget.
  start = absl::Now();
  s = open()->Decode(1e9, {.max_cpu_s = 0.2}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("max_decode_cpu_s"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(DecodeControlTest, RawPcmIsCancellable) {
  const std::vector<std::byte> pcm(16 << 20);  // 8.7 min of 16 kHz int16
  int polls = 0;
  absl::Status s = DecodePcm(pcm, PcmFormat{}, {},
                             {.cancelled = [&] { return ++polls > 2; }})
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(DecodePcm(pcm, PcmFormat{}).ok());
}

TEST(AudioErrorTest, MissingFile) {
  absl::StatusOr<Waveform> waveform = DecodeFilePath("/nonexistent/a.wav");
  EXPECT_EQ(waveform.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace diarization::audio
