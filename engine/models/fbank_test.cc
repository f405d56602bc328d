// Fbank against an independent float64 implementation of torchaudio's kaldi
// fbank (direct DFT, double mel banks) on real speech, plus cases known by
// construction. Parity against torchaudio's recorded output is in
// cpu_parity_test.cc (engine/models/testdata).
#include "engine/models/fbank.h"

#include <cmath>
#include <numbers>
#include <random>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "testing/reference_networks.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

TEST(FbankTest, FrameCount) {
  EXPECT_EQ(FbankFrames(160000), 998);
  EXPECT_EQ(FbankFrames(400), 1);
  EXPECT_EQ(FbankFrames(559), 1);
  EXPECT_EQ(FbankFrames(560), 2);
  EXPECT_EQ(FbankFrames(399), 0);
}

TEST(FbankTest, RejectsShortInputAndWrongOutputSize) {
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok()) << fbank.status();
  std::vector<float> x(399), out(80);
  EXPECT_EQ((*fbank)->Compute(x, out).code(),
            absl::StatusCode::kInvalidArgument);
  x.resize(400);
  out.resize(81);
  EXPECT_EQ((*fbank)->Compute(x, out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FbankTest, WindowAndMelBanksMatchClosedForms) {
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok());
  auto w = (*fbank)->window();
  ASSERT_EQ(w.size(), 400u);
  for (int n = 0; n < 400; ++n) {
    EXPECT_NEAR(w[n], 0.54 - 0.46 * std::cos(2 * std::numbers::pi * n / 399),
                1e-6);
  }
  EXPECT_NEAR(w[0], 0.08, 1e-7);
  auto banks = (*fbank)->mel_banks();
  ASSERT_EQ(banks.size(), 80u * 257u);
  // Bin 0 (0 Hz) is below 20 Hz: no weight; Nyquist column is zero.
  for (int b = 0; b < 80; ++b) {
    EXPECT_EQ(banks[b * 257 + 0], 0.0f);
    EXPECT_EQ(banks[b * 257 + 256], 0.0f);
  }
  // Each triangle peaks below 1 and is non-empty.
  for (int b = 0; b < 80; ++b) {
    float mx = 0;
    for (int i = 0; i < 257; ++i) mx = std::max(mx, banks[b * 257 + i]);
    EXPECT_GT(mx, 0.0f) << b;
    EXPECT_LE(mx, 1.0f) << b;
  }
}

TEST(FbankTest, PureToneLandsInItsMelBand) {
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok());
  // Quiet noise for 1 s, then the same noise plus a 1 kHz tone for 1 s. Mean
  // normalisation shifts every bin by a constant, so the tone-minus-noise
  // difference per bin still peaks at the band whose centre is nearest 1 kHz.
  const int n = 32000;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 1e-3f);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) {
    x[i] = noise(rng);
    if (i >= 16000) {
      x[i] += 0.3f * std::sin(2 * std::numbers::pi * 1000.0 * i / 16000.0);
    }
  }
  const int frames = FbankFrames(n);
  std::vector<float> out(frames * 80);
  ASSERT_TRUE((*fbank)->Compute(x, out).ok());
  const int noise_frame = 20, tone_frame = frames - 20;
  int best = -1;
  float best_diff = -1e30f;
  for (int b = 0; b < 80; ++b) {
    float diff = out[tone_frame * 80 + b] - out[noise_frame * 80 + b];
    if (diff > best_diff) best_diff = diff, best = b;
  }
  auto mel = [](double f) { return 1127.0 * std::log(1.0 + f / 700.0); };
  const double d = (mel(8000) - mel(20)) / 81.0;
  int expected = 0;
  double nearest = 1e30;
  for (int b = 0; b < 80; ++b) {
    double centre_mel = mel(20) + (b + 1) * d;
    double dist = std::abs(centre_mel - mel(1000));
    if (dist < nearest) nearest = dist, expected = b;
  }
  EXPECT_EQ(best, expected);
  EXPECT_GT(best_diff, 10.0f);  // a tone 50 dB above the noise floor
  for (int bin = 0; bin < 80; ++bin) {
    double mean = 0;
    for (int m = 0; m < frames; ++m) mean += out[m * 80 + bin];
    EXPECT_NEAR(mean / frames, 0.0, 1e-5);
  }
}

TEST(FbankTest, MatchesFloat64ReferenceOnSpeech) {
  auto wav = testing::ReadWavOrDie("pyannote-audio/sample/sample.wav");
  ASSERT_GE(wav.size(), 160000u * 2);
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok());
  for (int start : {0, 160000}) {
    std::vector<float> audio(wav.begin() + start, wav.begin() + start + 160000);
    std::vector<float> out(998 * 80);
    ASSERT_TRUE((*fbank)->Compute(audio, out).ok());
    std::vector<double> ref = testing::ReferenceFbank(
        audio, testing::FbankTimeDomain::kTorchFloat32, (*fbank)->window());
    double max_abs = 0.0;
    for (size_t i = 0; i < out.size(); ++i) {
      max_abs = std::max(max_abs, std::abs(out[i] - ref[i]));
    }

    std::cerr << "fbank vs float64 reference, window at " << start
              << ": max abs " << max_abs << "\n";
    // Measured 1.5e-6 (float32 DFT rounding vs float64, float mel product).
    // A formula or op-order mistake shows up at ≥ 1e-4.
    EXPECT_LT(max_abs, 1e-5);
  }
}

}  // namespace
}  // namespace diarization::models
