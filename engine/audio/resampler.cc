#include "engine/audio/resampler.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <numbers>
#include <numeric>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace diarization::audio {
namespace {

// torchaudio.functional.resample's defaults, as pyannote calls it.
constexpr int kLowpassFilterWidth = 6;
constexpr double kRolloff = 0.99;

// Kernels by input rate, shared by every stream at that rate: an odd rate
// (44099 Hz) has 16000 phases of ~34 taps (2 MiB), and computing them takes
// milliseconds, so 64 streams at one rate hold and compute one copy. Bounded:
// past kMaxKernels rates the oldest is dropped (streams keep theirs).
constexpr size_t kMaxKernels = 16;

struct KernelCache {
  absl::Mutex mu;
  std::map<int, std::shared_ptr<const SincKernel>> by_rate ABSL_GUARDED_BY(mu);
  std::vector<int> order ABSL_GUARDED_BY(mu);  // insertion order
};

KernelCache& Cache() {
  static KernelCache* cache = new KernelCache;
  return *cache;
}

absl::StatusOr<std::shared_ptr<const SincKernel>> KernelFor(int input_rate_hz) {
  KernelCache& cache = Cache();
  {
    absl::MutexLock lock(&cache.mu);
    auto it = cache.by_rate.find(input_rate_hz);
    if (it != cache.by_rate.end()) return it->second;
  }
  absl::StatusOr<SincKernel> kernel =
      SincKernel::Create(input_rate_hz, kSampleRateHz);
  if (!kernel.ok()) return kernel.status();
  auto shared = std::make_shared<const SincKernel>(*std::move(kernel));
  absl::MutexLock lock(&cache.mu);
  auto [it, inserted] = cache.by_rate.emplace(input_rate_hz, shared);
  if (inserted) {
    cache.order.push_back(input_rate_hz);
    if (cache.order.size() > kMaxKernels) {
      cache.by_rate.erase(cache.order.front());
      cache.order.erase(cache.order.begin());
    }
  }
  return it->second;
}

}  // namespace

absl::StatusOr<SincKernel> SincKernel::Create(int input_rate_hz,
                                              int output_rate_hz) {
  if (input_rate_hz <= 0 || output_rate_hz <= 0 ||
      input_rate_hz == output_rate_hz) {
    return absl::InvalidArgumentError(
        absl::StrCat("resampling needs two different positive rates, got ",
                     input_rate_hz, " Hz -> ", output_rate_hz, " Hz"));
  }
  SincKernel kernel;
  const int gcd = std::gcd(input_rate_hz, output_rate_hz);
  const int o = input_rate_hz / gcd;
  const int n = output_rate_hz / gcd;
  const double base = std::min(o, n) * kRolloff;
  const int w = static_cast<int>(std::ceil(kLowpassFilterWidth * o / base));
  kernel.input_step_ = o;
  kernel.output_step_ = n;
  kernel.width_ = w;
  kernel.offset_.resize(n);
  kernel.first_.resize(n);
  kernel.count_.resize(n);
  // Each step in float32, in torchaudio's order (its kernel is float32 for
  // a float32 waveform): t = (−p/n + (k − w)/o) loses up to ~1e-3 of t to
  // cancellation when o is large (44.1 kHz: o = 441), and pyannote's answer
  // is the one with that loss, so it is kept rather than computed exactly.
  const float base_f = static_cast<float>(base);
  const float pi_f = static_cast<float>(std::numbers::pi);
  const float scale_f = static_cast<float>(base / o);
  const float limit = static_cast<float>(kLowpassFilterWidth);
  for (int p = 0; p < n; ++p) {
    kernel.offset_[p] = static_cast<int>(kernel.taps_.size());
    const float phase = static_cast<float>(-p) / static_cast<float>(n);
    int first = -1;
    int count = 0;
    for (int k = 0; k < 2 * w + o; ++k) {
      const float idx = static_cast<float>(k - w) / static_cast<float>(o);
      float t = (phase + idx) * base_f;
      // torchaudio clamps t to ±6, where the Hann window is zero but for
      // float rounding (its taps there are below 1e-20): they are left out.
      if (!(t > -limit && t < limit)) {
        if (first >= 0) break;  // past the phase's taps
        continue;
      }
      if (first < 0) first = k;
      const float c = std::cos(t * pi_f / limit / 2.0f);
      const float window = c * c;
      t *= pi_f;
      const float sinc = t == 0.0f ? 1.0f : std::sin(t) / t;
      kernel.taps_.push_back(sinc * (window * scale_f));
      ++count;
    }
    kernel.first_[p] = std::max(first, 0);
    kernel.count_[p] = count;
  }
  // The outputs around the first whole second (input `input_rate_hz`,
  // output `output_rate_hz`) whose taps straddle it.
  const int64_t boundary = input_rate_hz;
  for (int64_t j = std::max(output_rate_hz - 1000, 0);
       j < output_rate_hz + 1000; ++j) {
    if (kernel.FirstInput(j) < boundary && kernel.LastInput(j) >= boundary) {
      kernel.crop_margin_ = std::max<int>(
          kernel.crop_margin_,
          j < output_rate_hz ? output_rate_hz - j : j - output_rate_hz + 1);
    }
  }
  return kernel;
}

int64_t SincKernel::OutputCount(int64_t num_inputs) const {
  // ceil(n·N / o), exact in integers (torchaudio divides in double; for
  // N up to a day at 192 kHz both give the same count).
  const int64_t numerator = static_cast<int64_t>(output_step_) * num_inputs;
  return (numerator + input_step_ - 1) / input_step_;
}

int64_t SincKernel::FirstInput(int64_t j) const {
  const int64_t b = j / output_step_;
  const int p = static_cast<int>(j % output_step_);
  return b * input_step_ - width_ + first_[p];
}

int64_t SincKernel::LastInput(int64_t j) const {
  const int p = static_cast<int>(j % output_step_);
  return FirstInput(j) + std::max(count_[p], 1) - 1;
}

float SincKernel::Output(std::span<const float> x, int64_t begin,
                         int64_t zero_before, int64_t zero_from,
                         int64_t j) const {
  const int p = static_cast<int>(j % output_step_);
  const float* taps = taps_.data() + offset_[p];
  const int count = count_[p];
  const int64_t first = FirstInput(j);
  // Double accumulation: within 1e-7 of torchaudio's float32 convolution,
  // whose own summation order is not specified.
  double sum = 0.0;
  if (first >= zero_before && first + count <= zero_from) {
    const float* in = x.data() + (first - begin);
    for (int i = 0; i < count; ++i) {
      sum += static_cast<double>(taps[i]) * in[i];
    }
  } else {
    for (int i = 0; i < count; ++i) {
      const int64_t index = first + i;
      if (index < zero_before || index >= zero_from) continue;
      sum += static_cast<double>(taps[i]) * x[index - begin];
    }
  }
  return static_cast<float>(sum);
}

absl::StatusOr<std::unique_ptr<Resampler>> Resampler::Create(
    int input_rate_hz) {
  // A bad rate is refused by SincKernel::Create.
  if (input_rate_hz == kSampleRateHz) {
    return std::unique_ptr<Resampler>(new Resampler(input_rate_hz, nullptr));
  }
  absl::StatusOr<std::shared_ptr<const SincKernel>> kernel =
      KernelFor(input_rate_hz);
  if (!kernel.ok()) return kernel.status();
  return std::unique_ptr<Resampler>(
      new Resampler(input_rate_hz, *std::move(kernel)));
}

Resampler::Resampler(int input_rate_hz,
                     std::shared_ptr<const SincKernel> kernel)
    : kernel_(std::move(kernel)),
      input_rate_hz_(input_rate_hz),
      margin_(kernel_ == nullptr ? 0 : kernel_->crop_margin()) {}

Resampler::~Resampler() = default;

void Resampler::AppendSecond(int64_t k, int64_t zero_from,
                             CropEdges* edges) const {
  const std::span<const float> x(buffer_);
  const int64_t boundary = k * input_rate_hz_;
  const int64_t first = k * kSampleRateHz;
  // A crop ending at second k: zero from its end (or the recording's).
  for (int64_t j = first - margin_; j < first; ++j) {
    edges->seconds.push_back(
        j < 0 ? 0.0f
              : kernel_->Output(x, buffer_begin_, 0,
                                std::min(boundary, zero_from), j));
  }
  // A crop starting at second k: zero before its start.
  for (int64_t j = first; j < first + margin_; ++j) {
    edges->seconds.push_back(
        kernel_->Output(x, buffer_begin_, boundary, zero_from, j));
  }
}

void Resampler::Emit(int64_t end, int64_t zero_from, std::vector<float>& out,
                     CropEdges* edges) {
  const std::span<const float> x(buffer_);
  if (edges != nullptr) edges->margin = margin_;
  for (; next_output_ < end; ++next_output_) {
    if (next_output_ == 0 && next_second_ == 0) {
      if (edges != nullptr) AppendSecond(0, zero_from, edges);
      ++next_second_;
    }
    out.push_back(
        kernel_->Output(x, buffer_begin_, 0, zero_from, next_output_));
    if ((next_output_ + 1) % kSampleRateHz == 0) {
      // Second k's edges come with output 16000k − 1, so a window that ends
      // at second k finds them with its last sample (Process holds outputs
      // back until the edges' inputs have arrived).
      if (edges != nullptr) AppendSecond(next_second_, zero_from, edges);
      ++next_second_;
    }
  }
  // Drop the input no later output or edge reads, in large steps.
  const int64_t tail_from =
      std::max<int64_t>(next_second_ * kSampleRateHz - margin_, 0);
  const int64_t keep_from =
      std::max<int64_t>(std::min(kernel_->FirstInput(next_output_),
                                 kernel_->FirstInput(tail_from)),
                        buffer_begin_);
  if (keep_from - buffer_begin_ >= 65536) {
    buffer_.erase(buffer_.begin(),
                  buffer_.begin() + (keep_from - buffer_begin_));
    buffer_begin_ = keep_from;
  }
}

absl::Status Resampler::Process(std::span<const float> input,
                                std::vector<float>& out, CropEdges* edges) {
  if (kernel_ == nullptr) {
    out.insert(out.end(), input.begin(), input.end());
    return absl::OkStatus();
  }
  buffer_.insert(buffer_.end(), input.begin(), input.end());
  received_ += static_cast<int64_t>(input.size());
  // Outputs whose inputs, and those of the next `margin_` outputs (the
  // edges due with them), have all arrived (LastInput grows with j).
  int64_t end = next_output_;
  while (kernel_->LastInput(end + margin_) < received_) ++end;
  Emit(end, received_, out, edges);
  return absl::OkStatus();
}

absl::Status Resampler::Flush(std::vector<float>& out, CropEdges* edges) {
  if (kernel_ == nullptr) return absl::OkStatus();
  const int64_t total = kernel_->OutputCount(received_);
  Emit(total, received_, out, edges);
  if (edges == nullptr) return absl::OkStatus();
  const std::span<const float> x(buffer_);
  // A crop past the end keeps the filter's tail, the recording does not.
  for (int64_t j = total; kernel_->FirstInput(j) < received_; ++j) {
    edges->past_end.push_back(
        kernel_->Output(x, buffer_begin_, 0, received_, j));
  }
  // Every second whose edges are not all zero.
  const int64_t nonzero_end =
      total + static_cast<int64_t>(edges->past_end.size());
  while (next_second_ * kSampleRateHz - margin_ < nonzero_end) {
    AppendSecond(next_second_++, received_, edges);
  }
  edges->finished = true;
  return absl::OkStatus();
}

}  // namespace diarization::audio
