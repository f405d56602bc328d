#include "engine/audio/resampler.h"

#include <soxr.h>

#include <cmath>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/audio/audio.h"

namespace diarization::audio {

absl::StatusOr<std::unique_ptr<Resampler>> Resampler::Create(
    int input_rate_hz) {
  if (input_rate_hz <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resampler input rate must be positive, got ", input_rate_hz, " Hz"));
  }
  if (input_rate_hz == kSampleRateHz) {
    return std::unique_ptr<Resampler>(new Resampler(input_rate_hz, nullptr));
  }
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  // Very-high quality (175 dB, linear phase): the cost is negligible next to
  // the networks, and it keeps the resampled audio as close as possible to the
  // band-limited original.
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_VHQ, 0);
  // One thread: the service parallelises across requests, not inside one.
  const soxr_runtime_spec_t runtime = soxr_runtime_spec(1);
  soxr_error_t error = nullptr;
  soxr_t soxr = soxr_create(input_rate_hz, kSampleRateHz, 1, &error, &io,
                            &quality, &runtime);
  if (error != nullptr || soxr == nullptr) {
    if (soxr != nullptr) soxr_delete(soxr);
    return absl::InternalError(absl::StrCat(
        "soxr_create(", input_rate_hz, " Hz -> ", kSampleRateHz,
        " Hz) failed: ", error != nullptr ? error : "unknown error"));
  }
  return std::unique_ptr<Resampler>(new Resampler(input_rate_hz, soxr));
}

Resampler::Resampler(int input_rate_hz, void* soxr)
    : input_rate_hz_(input_rate_hz), soxr_(soxr) {}

Resampler::~Resampler() {
  if (soxr_ != nullptr) soxr_delete(static_cast<soxr_t>(soxr_));
}

absl::Status Resampler::Process(std::span<const float> input,
                                std::vector<float>& out) {
  if (soxr_ == nullptr) {
    out.insert(out.end(), input.begin(), input.end());
    return absl::OkStatus();
  }
  soxr_t soxr = static_cast<soxr_t>(soxr_);
  // soxr may hold input back; loop until it has taken all of it.
  size_t consumed = 0;
  while (consumed < input.size()) {
    const size_t remaining = input.size() - consumed;
    const size_t capacity =
        static_cast<size_t>(std::ceil(static_cast<double>(remaining) *
                                      kSampleRateHz / input_rate_hz_)) +
        64;
    const size_t old_size = out.size();
    out.resize(old_size + capacity);
    size_t input_done = 0;
    size_t output_done = 0;
    soxr_error_t error =
        soxr_process(soxr, input.data() + consumed, remaining, &input_done,
                     out.data() + old_size, capacity, &output_done);
    out.resize(old_size + output_done);
    if (error != nullptr) {
      return absl::InternalError(absl::StrCat("soxr_process failed: ", error));
    }
    consumed += input_done;
    if (input_done == 0 && output_done == 0) {
      return absl::InternalError("soxr_process made no progress");
    }
  }
  return absl::OkStatus();
}

absl::Status Resampler::Flush(std::vector<float>& out) {
  if (soxr_ == nullptr) return absl::OkStatus();
  soxr_t soxr = static_cast<soxr_t>(soxr_);
  constexpr size_t kBlock = 4096;
  while (true) {
    const size_t old_size = out.size();
    out.resize(old_size + kBlock);
    size_t output_done = 0;
    // A null input signals the end of the input to soxr.
    soxr_error_t error = soxr_process(
        soxr, nullptr, 0, nullptr, out.data() + old_size, kBlock, &output_done);
    out.resize(old_size + output_done);
    if (error != nullptr) {
      return absl::InternalError(absl::StrCat("soxr_process failed: ", error));
    }
    if (output_done == 0) return absl::OkStatus();
  }
}

}  // namespace diarization::audio
