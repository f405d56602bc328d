#include "engine/models/fbank.h"

#include <fftw3.h>

#include <cmath>
#include <eigen3/Eigen/Core>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace diarization::models {
namespace {

// FFTW's planner is not thread-safe; plan creation and destruction go
// through this lock. Execution with new arrays is thread-safe.
absl::Mutex& FftwPlannerMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

constexpr int kFftBins = kFbankFftSize / 2 + 1;  // 257

// torch.hamming_window(400, periodic=False, alpha=0.54, beta=0.46) in
// float32: arange · fl(2π/399), cos, · (−0.46), + 0.54, each rounded.
std::vector<float> HammingWindow() {
  std::vector<float> w(kFbankWindowSamples);
  const float step =
      static_cast<float>(2.0 * std::numbers::pi / (kFbankWindowSamples - 1));
  for (int n = 0; n < kFbankWindowSamples; ++n) {
    float t = static_cast<float>(n) * step;
    float c = std::cos(t);
    float m = c * -0.46f;
    w[n] = m + 0.54f;
  }
  return w;
}

// torchaudio get_mel_banks (vtln off) in float32: the scalar mel edges are
// Python doubles, the per-bin arithmetic is float32 tensors.
std::vector<float> MelBanks() {
  auto mel_scalar = [](double f) { return 1127.0 * std::log(1.0 + f / 700.0); };
  const double low_freq = 20.0;
  const double high_freq = kSampleRateHz / 2.0;  // 0 → Nyquist
  const double mel_low = mel_scalar(low_freq);
  const double mel_high = mel_scalar(high_freq);
  const double delta = (mel_high - mel_low) / (kFbankMelBins + 1);
  const float mel_low_f = static_cast<float>(mel_low);
  const float delta_f = static_cast<float>(delta);
  const float bin_width =
      static_cast<float>(kSampleRateHz) / kFbankFftSize;  // 31.25, exact

  std::vector<float> mel_of_bin(kFbankFftSize / 2);
  for (int i = 0; i < kFbankFftSize / 2; ++i) {
    float f = bin_width * static_cast<float>(i);
    float r = f / 700.0f;
    float a = 1.0f + r;
    float l = std::log(a);
    mel_of_bin[i] = 1127.0f * l;
  }
  std::vector<float> banks(kFbankMelBins * kFftBins, 0.0f);
  for (int b = 0; b < kFbankMelBins; ++b) {
    const float bf = static_cast<float>(b);
    const float left = mel_low_f + bf * delta_f;
    const float center = mel_low_f + (bf + 1.0f) * delta_f;
    const float right = mel_low_f + (bf + 2.0f) * delta_f;
    for (int i = 0; i < kFbankFftSize / 2; ++i) {
      const float mel = mel_of_bin[i];
      const float up = (mel - left) / (center - left);
      const float down = (right - mel) / (right - center);
      banks[b * kFftBins + i] = std::max(0.0f, std::min(up, down));
    }
    // Column 256 (Nyquist) stays 0: torchaudio pads the bank with a zero.
  }
  return banks;
}

struct FftwBuffer {
  explicit FftwBuffer(size_t bytes) : ptr(fftw_malloc(bytes)) {}
  ~FftwBuffer() { fftw_free(ptr); }
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;
  void* ptr;
};

}  // namespace

struct Fbank::Plan {
  fftw_plan plan = nullptr;
  ~Plan() {
    if (plan != nullptr) {
      absl::MutexLock lock(&FftwPlannerMutex());
      fftw_destroy_plan(plan);
    }
  }
};

Fbank::~Fbank() = default;

absl::StatusOr<std::unique_ptr<Fbank>> Fbank::Create() {
  std::unique_ptr<Fbank> fbank(new Fbank());
  fbank->window_ = HammingWindow();
  fbank->mel_banks_ = MelBanks();
  fbank->plan_ = std::make_unique<Plan>();
  FftwBuffer in(sizeof(double) * kFbankFftSize);
  FftwBuffer out(sizeof(fftw_complex) * kFftBins);
  {
    absl::MutexLock lock(&FftwPlannerMutex());
    fbank->plan_->plan = fftw_plan_dft_r2c_1d(
        kFbankFftSize, static_cast<double*>(in.ptr),
        static_cast<fftw_complex*>(out.ptr), FFTW_ESTIMATE);
  }
  if (fbank->plan_->plan == nullptr) {
    return absl::InternalError("FFTW could not plan a 512-point real DFT");
  }
  return fbank;
}

absl::Status Fbank::Compute(std::span<const float> samples,
                            std::span<float> out) const {
  if (samples.size() < static_cast<size_t>(kFbankWindowSamples)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fbank needs at least ", kFbankWindowSamples,
                     " samples (one 25 ms frame), got ", samples.size()));
  }
  const int num_frames = FbankFrames(static_cast<int>(samples.size()));
  if (out.size() != static_cast<size_t>(num_frames) * kFbankMelBins) {
    return absl::InvalidArgumentError(
        absl::StrCat("fbank output holds ", out.size(), " floats, expected ",
                     num_frames, " frames × ", kFbankMelBins));
  }

  FftwBuffer in_buf(sizeof(double) * kFbankFftSize);
  FftwBuffer out_buf(sizeof(fftw_complex) * kFftBins);
  double* fft_in = static_cast<double*>(in_buf.ptr);
  fftw_complex* fft_out = static_cast<fftw_complex*>(out_buf.ptr);
  for (int j = kFbankWindowSamples; j < kFbankFftSize; ++j) fft_in[j] = 0.0;

  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> power(
      num_frames, kFftBins);
  float frame[kFbankWindowSamples];
  for (int m = 0; m < num_frames; ++m) {
    const float* src =
        samples.data() + static_cast<size_t>(m) * kFbankShiftSamples;
    // 1. Scale to the int16 range. 3. Frame mean (exact: the scaled samples
    // are integers for int16 audio, and the sum fits float's mantissa; a
    // double sum gives the correctly rounded mean either way).
    double sum = 0.0;
    for (int j = 0; j < kFbankWindowSamples; ++j) {
      frame[j] = src[j] * 32768.0f;
      sum += frame[j];
    }
    const float mean = static_cast<float>(
        static_cast<float>(sum) / static_cast<float>(kFbankWindowSamples));
    for (int j = 0; j < kFbankWindowSamples; ++j) frame[j] = frame[j] - mean;
    // 4. Pre-emphasis with replicate padding, 5. window: float32 steps.
    float prev = frame[0];
    for (int j = 0; j < kFbankWindowSamples; ++j) {
      const float cur = frame[j];
      const float emph = 0.97f * prev;
      const float y = cur - emph;
      fft_in[j] = static_cast<double>(y * window_[j]);
      prev = cur;
    }
    // 6. DFT (zero-padded to 512) and power = |X|^2 as torch rounds it:
    // abs to float, then squared in float.
    fftw_execute_dft_r2c(plan_->plan, fft_in, fft_out);
    float* prow = power.row(m).data();
    for (int k = 0; k < kFftBins; ++k) {
      const double re = fft_out[k][0];
      const double im = fft_out[k][1];
      const float mag = static_cast<float>(std::sqrt(re * re + im * im));
      prow[k] = mag * mag;
    }
  }

  // 8. Mel energies = power · banksᵀ, log with the float epsilon floor.
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic,
                                 Eigen::RowMajor>>
      banks(mel_banks_.data(), kFbankMelBins, kFftBins);
  Eigen::Map<
      Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
      feats(out.data(), num_frames, kFbankMelBins);
  feats.noalias() = power * banks.transpose();
  const float eps = std::numeric_limits<float>::epsilon();
  for (int m = 0; m < num_frames; ++m) {
    for (int b = 0; b < kFbankMelBins; ++b) {
      feats(m, b) = std::log(std::max(feats(m, b), eps));
    }
  }
  // 9. pyannote's mean normalisation over frames, per mel bin.
  for (int b = 0; b < kFbankMelBins; ++b) {
    double sum = 0.0;
    for (int m = 0; m < num_frames; ++m) sum += feats(m, b);
    const float mean = static_cast<float>(sum / num_frames);
    for (int m = 0; m < num_frames; ++m) feats(m, b) = feats(m, b) - mean;
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
