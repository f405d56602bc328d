// libFuzzer target over request handling without sockets: the Diarize
// stream's message sequencing and validation (StreamSession, driven with a
// fake job), and the unary DiarizeFile path up to the engine (config
// validation, the container header, bounded decoding). Built and run by
// request_fuzz_test.sh; a crash, a sanitizer report, a leak or a broken
// invariant (abort) fails the test.
//
// Input: byte 0 picks the mode. Stream mode: records [kind][len lo][len hi]
// [payload]: kind 0 a DiarizeRequest parsed from the payload (protobuf wire
// format), 1 a config built from the payload bytes (reaches valid configs
// quickly), 2 an audio message carrying the payload, 3 the half-close; the
// kind's high bits make the fake job refuse. Unary mode: the rest is a
// DiarizeFileRequest in wire format.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "server/limits.h"
#include "server/request_validation.h"
#include "server/stream_session.h"

namespace {

using diarization::server::ServiceLimits;
using diarization::server::StreamJobSink;
using diarization::server::StreamSession;
using diarization::server::ValidatedConfig;
namespace v1 = diarization::v1;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

// Small limits keep each run fast; the code paths are the same.
ServiceLimits Limits() {
  ServiceLimits l;
  l.max_audio_s_per_request = 20.0;
  return l;
}

// Checks the session's promises to the job: Start once and first, nothing
// after Finish, nothing after a refusal.
class CheckingSink : public StreamJobSink {
 public:
  absl::Status Start(const ValidatedConfig& config) override {
    Check(!started_, "Start twice");
    Check(!refused_, "Start after a refusal");
    Check(config.sample_rate_hz > 0 && config.channel_count > 0,
          "Start with an invalid config");
    started_ = true;
    return Answer();
  }
  absl::Status Append(std::span<const float> samples,
                      const diarization::CropEdges& crop_edges) override {
    Check(started_ && !finished_ && !refused_, "Append out of order");
    Check(!samples.empty() || !crop_edges.empty(), "empty Append");
    for (float v : samples) Check(v == v, "NaN appended");
    absl::Status s = Answer();
    if (s.ok()) appended_ += samples.size();  // a refused chunk is not taken
    return s;
  }
  absl::Status Finish() override {
    Check(started_ && !finished_ && !refused_, "Finish out of order");
    finished_ = true;
    return Answer();
  }
  // The next call fails.
  void RefuseNext() { refuse_next_ = true; }
  size_t appended() const { return appended_; }

 private:
  absl::Status Answer() {
    if (!refuse_next_) return absl::OkStatus();
    refuse_next_ = false;
    refused_ = true;
    return absl::CancelledError("the fake job refuses");
  }
  bool started_ = false, finished_ = false, refused_ = false;
  bool refuse_next_ = false;
  size_t appended_ = 0;
};

v1::DiarizeRequest ConfigFromBytes(const uint8_t* p, size_t n) {
  auto at = [&](size_t i) -> uint8_t { return i < n ? p[i] : 0; };
  static constexpr int kRates[] = {16000,  8000, 44100, 48000, 22050,
                                   192000, 0,    7999,  -1,    200000};
  v1::DiarizeRequest r;
  v1::DiarizationConfig* c = r.mutable_config();
  // 0..5 are the encodings (MULAW, ALAW too), 6 an unknown one.
  c->mutable_audio()->set_encoding(static_cast<v1::AudioEncoding>(at(0) % 7));
  c->mutable_audio()->set_sample_rate_hz(kRates[at(1) % 10]);
  c->mutable_audio()->set_channel_count(at(2) % 40 - 2);
  c->mutable_speakers()->set_num_speakers(at(3) % 70 - 2);
  c->mutable_speakers()->set_min_speakers(at(4) % 70 - 2);
  c->mutable_speakers()->set_max_speakers(at(5) % 70 - 2);
  c->mutable_options()->set_partial_results(at(6) & 1);
  c->mutable_options()->set_partial_interval_s((at(7) % 20) * 0.5 - 1);
  c->mutable_options()->set_quality(static_cast<v1::QualityMode>(at(8) % 4));
  // Channel policy from bytes 6 and 7's high bits: 0..3 and an unknown 4;
  // an index from -1 to 6.
  c->mutable_audio()->set_channel_policy(
      static_cast<v1::ChannelPolicy>((at(6) >> 1) % 5));
  c->mutable_audio()->set_channel_index((at(7) >> 5) - 1);
  if (n > 9) {
    c->set_request_id(std::string(reinterpret_cast<const char*>(p + 9),
                                  std::min<size_t>(n - 9, 140)));
  }
  return r;
}

void FuzzStream(const uint8_t* data, size_t size) {
  CheckingSink sink;
  StreamSession session(Limits(), &sink);
  absl::Status first_error;
  size_t at = 0;
  while (at + 3 <= size) {
    const uint8_t kind = data[at];
    const size_t len = std::min<size_t>(
        data[at + 1] | (size_t{data[at + 2]} << 8), size - at - 3);
    const uint8_t* payload = data + at + 3;
    at += 3 + len;
    if ((kind & 0xC0) == 0xC0) sink.RefuseNext();
    absl::Status s;
    switch (kind % 4) {
      case 0: {
        v1::DiarizeRequest r;
        if (!r.ParseFromArray(payload, static_cast<int>(len))) continue;
        s = session.OnMessage(r);
        break;
      }
      case 1:
        s = session.OnMessage(ConfigFromBytes(payload, len));
        break;
      case 2: {
        v1::DiarizeRequest r;
        r.set_audio(std::string(reinterpret_cast<const char*>(payload), len));
        s = session.OnMessage(r);
        break;
      }
      case 3:
        s = session.OnEndOfInput();
        break;
    }
    if (!first_error.ok()) {
      Check(s == first_error, "an error that is not sticky");
    } else if (!s.ok()) {
      first_error = s;
    }
    Check(static_cast<size_t>(session.appended_s() * 16000 + 0.5) ==
              sink.appended(),
          "appended_s disagrees with the job");
  }
}

void FuzzUnary(const uint8_t* data, size_t size) {
  v1::DiarizeFileRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  const ServiceLimits limits = Limits();
  absl::StatusOr<ValidatedConfig> config = diarization::server::ValidateConfig(
      request.config(), diarization::server::RpcKind::kUnary, limits);
  if (!config.ok()) return;
  const std::string& bytes = request.audio();
  const auto audio = std::as_bytes(std::span(bytes.data(), bytes.size()));
  const diarization::audio::DecodeLimits decode =
      diarization::server::ToDecodeLimits(limits);
  const diarization::audio::DecodeControl control{.max_cpu_s = 2.0};
  if (config->encoding == v1::ENCODED) {
    auto file = diarization::audio::FileDecoder::Open(audio, decode);
    if (!file.ok()) return;
    const auto& header = (*file)->header();
    Check(header.sample_rate_hz >= limits.min_sample_rate_hz &&
              header.sample_rate_hz <= limits.max_sample_rate_hz,
          "header rate outside the limits");
    auto wave = (*file)->Decode(5.0, control);
    if (wave.ok()) {
      Check(wave->duration_s() <= 5.0 + 0.01, "decoded past the bound");
    }
  } else {
    auto wave = diarization::audio::DecodePcm(
        audio, diarization::server::ToPcmFormat(*config), decode, control);
    if (wave.ok()) {
      Check(wave->duration_s() <= limits.max_audio_s_per_request + 0.01,
            "decoded past max_audio_s_per_request");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] % 2 == 0) {
    FuzzStream(data + 1, size - 1);
  } else {
    FuzzUnary(data + 1, size - 1);
  }
  return 0;
}
