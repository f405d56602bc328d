// The resampler against torchaudio.functional.resample (pyannote's call), on
// the noise of tools/reference/record_resample.py; whole and streamed.
#include "engine/audio/resampler.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/common/crop_edges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::audio {
namespace {

// The recorder's noise: Knuth's MMIX LCG seeded with the rate, top 24 bits.
std::vector<float> Noise(int rate, int count) {
  uint64_t state = static_cast<uint64_t>(rate);
  std::vector<float> values(count);
  for (int i = 0; i < count; ++i) {
    values[i] = static_cast<float>(
        static_cast<double>(state >> 40) / static_cast<double>(1 << 23) - 1.0);
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return values;
}

std::vector<float> ReadFloats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing reference " << path
                         << " (tools/reference/record_resample.py)";
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

std::vector<float> ResampleWhole(int rate, std::span<const float> x) {
  absl::StatusOr<std::unique_ptr<Resampler>> resampler =
      Resampler::Create(rate);
  EXPECT_TRUE(resampler.ok()) << resampler.status();
  std::vector<float> out;
  EXPECT_TRUE((*resampler)->Process(x, out).ok());
  EXPECT_TRUE((*resampler)->Flush(out).ok());
  return out;
}

class TorchaudioTest : public ::testing::TestWithParam<int> {};

TEST_P(TorchaudioTest, MatchesTorchaudioWithin1e6) {
  const int rate = GetParam();
  const std::vector<float> x = Noise(rate, rate / 2 + 37);
  const std::vector<float> expected = ReadFloats(
      std::filesystem::path(testing::SourceRoot()) /
      "testing/testdata/resample_torchaudio" / (std::to_string(rate) + ".f32"));
  ASSERT_FALSE(expected.empty());
  const std::vector<float> got = ResampleWhole(rate, x);
  // torchaudio's output length, ceil(16000 · N / rate), exactly.
  ASSERT_EQ(got.size(), expected.size());
  double max_error = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_error = std::max(max_error,
                         std::abs(static_cast<double>(got[i]) - expected[i]));
  }
  EXPECT_LE(max_error, 1e-6) << rate << " Hz";
}

TEST_P(TorchaudioTest, StreamedInAnyPiecesIsTheWholeBitForBit) {
  const int rate = GetParam();
  const std::vector<float> x = Noise(rate, rate / 2 + 37);
  const std::vector<float> whole = ResampleWhole(rate, x);
  std::mt19937 rng(rate);
  for (int trial = 0; trial < 3; ++trial) {
    absl::StatusOr<std::unique_ptr<Resampler>> resampler =
        Resampler::Create(rate);
    ASSERT_TRUE(resampler.ok());
    std::vector<float> out;
    size_t at = 0;
    while (at < x.size()) {
      const size_t piece = std::min<size_t>(
          x.size() - at,
          std::uniform_int_distribution<size_t>(0, trial == 0 ? 3 : 5000)(rng));
      ASSERT_TRUE(
          (*resampler)
              ->Process(std::span<const float>(x).subspan(at, piece), out)
              .ok());
      at += piece;
    }
    ASSERT_TRUE((*resampler)->Flush(out).ok());
    EXPECT_EQ(out, whole) << rate << " Hz, trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, TorchaudioTest,
                         ::testing::Values(8000, 11025, 22050, 24000, 32000,
                                           44100, 48000, 96000, 44099));

// pyannote's embedding crops (Audio.crop, then resample alone), 1 s long at
// 0, 1, 2 and 3 s of 3.4 s of noise: the resampled recording's samples plus
// ApplyCropEdges against torchaudio's pieces (record_resample.py: first and
// last 64 outputs of each crop, and the 64 from the recording's end on).
class CropTest : public ::testing::TestWithParam<int> {};

TEST_P(CropTest, RecordingPlusEdgesIsTorchaudiosCrop) {
  const int rate = GetParam();
  const std::vector<float> x = Noise(rate, rate * 34 / 10);
  const std::vector<float> expected =
      ReadFloats(std::filesystem::path(testing::SourceRoot()) /
                 "testing/testdata/resample_torchaudio" /
                 (std::to_string(rate) + ".crops.f32"));
  ASSERT_EQ(expected.size(), 9u * 64u);
  // Streamed in uneven pieces: the edges must not depend on them.
  absl::StatusOr<std::unique_ptr<Resampler>> resampler =
      Resampler::Create(rate);
  ASSERT_TRUE(resampler.ok());
  std::vector<float> recording;
  CropEdges edges;
  std::mt19937 rng(rate);
  for (size_t at = 0; at < x.size();) {
    const size_t piece = std::min<size_t>(
        x.size() - at, std::uniform_int_distribution<size_t>(1, 7000)(rng));
    CropEdges chunk;
    ASSERT_TRUE((*resampler)
                    ->Process(std::span<const float>(x).subspan(at, piece),
                              recording, &chunk)
                    .ok());
    edges.Append(chunk);
    at += piece;
  }
  CropEdges last;
  ASSERT_TRUE((*resampler)->Flush(recording, &last).ok());
  edges.Append(last);
  ASSERT_EQ(recording, ResampleWhole(rate, x));
  ASSERT_GT(edges.margin, 0);
  const int64_t end = static_cast<int64_t>(recording.size());

  size_t piece = 0;
  double max_error = 0.0, max_unpatched_error = 0.0;
  for (int start = 0; start < 4; ++start) {
    std::vector<float> window(16000, 0.0f);
    for (int i = 0; i < 16000 && start * 16000 + i < end; ++i) {
      window[i] = recording[start * 16000 + i];
    }
    const std::vector<float> unpatched = window;
    ASSERT_TRUE(ApplyCropEdges(edges, end, start, window));
    std::vector<int64_t> offsets = {0, 16000 - 64};
    if ((start + 1) * 16000 > end) offsets.push_back(end - start * 16000);
    for (const int64_t offset : offsets) {
      for (int i = 0; i < 64; ++i, ++piece) {
        max_error =
            std::max(max_error, std::abs(static_cast<double>(
                                    window[offset + i] - expected[piece])));
        max_unpatched_error = std::max(
            max_unpatched_error, std::abs(static_cast<double>(
                                     unpatched[offset + i] - expected[piece])));
      }
    }
  }
  EXPECT_EQ(piece, expected.size());
  EXPECT_LE(max_error, 1e-6) << rate << " Hz";
  // Without the edges the crops are not torchaudio's (the test can fail).
  EXPECT_GT(max_unpatched_error, 1e-4) << rate << " Hz";
}

INSTANTIATE_TEST_SUITE_P(Rates, CropTest,
                         ::testing::Values(8000, 22050, 44100, 48000, 44099));

TEST(CropEdgesTest, UnknownSecondsAreRefusedUntilTheEnd) {
  const std::vector<float> x = Noise(44100, 44100 * 3);
  absl::StatusOr<std::unique_ptr<Resampler>> resampler =
      Resampler::Create(44100);
  ASSERT_TRUE(resampler.ok());
  std::vector<float> recording;
  CropEdges edges;
  ASSERT_TRUE((*resampler)
                  ->Process(std::span<const float>(x).first(44100 * 2),
                            recording, &edges)
                  .ok());
  // Seconds 0 and 1 ended, second 2's last output is not out yet.
  EXPECT_EQ(edges.known_seconds(), 2);
  EXPECT_LT(recording.size(), 32000u);
  std::vector<float> window(16000, 0.0f);
  EXPECT_TRUE(ApplyCropEdges(edges, 48000, 0, window));
  EXPECT_FALSE(ApplyCropEdges(edges, 48000, 1, window));
  ASSERT_TRUE((*resampler)
                  ->Process(std::span<const float>(x).subspan(44100 * 2),
                            recording, &edges)
                  .ok());
  ASSERT_TRUE((*resampler)->Flush(recording, &edges).ok());
  EXPECT_TRUE(edges.finished);
  EXPECT_TRUE(ApplyCropEdges(edges, 48000, 1, window));
  EXPECT_TRUE(ApplyCropEdges(edges, 48000, 7, window));  // silence
}

TEST(CropEdgesTest, SixteenKilohertzHasNone) {
  absl::StatusOr<std::unique_ptr<Resampler>> resampler =
      Resampler::Create(16000);
  ASSERT_TRUE(resampler.ok());
  std::vector<float> out;
  CropEdges edges;
  const std::vector<float> x = Noise(16000, 20000);
  ASSERT_TRUE((*resampler)->Process(x, out, &edges).ok());
  ASSERT_TRUE((*resampler)->Flush(out, &edges).ok());
  EXPECT_TRUE(edges.empty());
  EXPECT_EQ(out, x);
}

// The margin (outputs a crop boundary changes on each side) at the common
// rates: a few, so the edges cost tens of bytes a second.
TEST(CropEdgesTest, MarginsAtCommonRates) {
  for (const auto [rate, margin] : std::vector<std::pair<int, int>>{
           {8000, 12}, {22050, 6}, {44100, 6}, {48000, 6}}) {
    absl::StatusOr<std::unique_ptr<Resampler>> resampler =
        Resampler::Create(rate);
    ASSERT_TRUE(resampler.ok());
    EXPECT_EQ((*resampler)->margin(), margin) << rate << " Hz";
  }
}

TEST(ResamplerTest, SixteenKilohertzPassesThrough) {
  const std::vector<float> x = Noise(16000, 1000);
  EXPECT_EQ(ResampleWhole(16000, x), x);
}

TEST(ResamplerTest, EmptyInputGivesNothing) {
  EXPECT_TRUE(ResampleWhole(44100, {}).empty());
}

TEST(ResamplerTest, RefusesABadRate) {
  EXPECT_EQ(Resampler::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SincKernel::Create(16000, 16000).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace diarization::audio
