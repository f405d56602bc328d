#include "server/request_validation.h"

#include <cmath>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace diarization::server {
namespace {

constexpr size_t kMaxTokenLength = 128;

absl::Status Invalid(auto&&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

absl::Status ValidateHints(const v1::SpeakerHints& h,
                           const ServiceLimits& limits) {
  const struct {
    const char* name;
    int value;
  } fields[] = {{"speakers.num_speakers", h.num_speakers()},
                {"speakers.min_speakers", h.min_speakers()},
                {"speakers.max_speakers", h.max_speakers()}};
  for (const auto& f : fields) {
    if (f.value < 0 || f.value > limits.max_speakers) {
      return Invalid(f.name, " is ", f.value, "; it must be 0 (unset) or 1 to ",
                     limits.max_speakers);
    }
  }
  if (h.min_speakers() > 0 && h.max_speakers() > 0 &&
      h.min_speakers() > h.max_speakers()) {
    return Invalid("speakers.min_speakers (", h.min_speakers(),
                   ") is greater than speakers.max_speakers (",
                   h.max_speakers(), ")");
  }
  if (h.num_speakers() > 0) {
    if (h.min_speakers() > h.num_speakers()) {
      return Invalid("speakers.min_speakers (", h.min_speakers(),
                     ") is greater than speakers.num_speakers (",
                     h.num_speakers(), ")");
    }
    if (h.max_speakers() > 0 && h.max_speakers() < h.num_speakers()) {
      return Invalid("speakers.max_speakers (", h.max_speakers(),
                     ") is less than speakers.num_speakers (", h.num_speakers(),
                     ")");
    }
  }
  return absl::OkStatus();
}

}  // namespace

int ValidatedConfig::frame_bytes() const {
  switch (encoding) {
    case v1::LINEAR16:
      return 2 * channel_count;
    case v1::FLOAT32:
      return 4 * channel_count;
    case v1::MULAW:
    case v1::ALAW:
      return channel_count;
    default:
      return 0;
  }
}

absl::Status ValidateToken(const std::string& value, const char* field) {
  if (value.empty() || value.size() > kMaxTokenLength) {
    return Invalid(field, " has ", value.size(),
                   " characters; it must have 1 to ", kMaxTokenLength);
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < '!' || c > '~') {
      return Invalid(field, " has character code ", static_cast<int>(c),
                     " at position ", i,
                     "; only printable ASCII without spaces ('!' to '~') is "
                     "allowed");
    }
  }
  return absl::OkStatus();
}

std::string NewRequestId() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  uint64_t bits;
  {
    absl::MutexLock lock(&mu);
    bits = absl::Uniform<uint64_t>(*gen);
  }
  return absl::StrFormat("srv-%016x", bits);
}

absl::StatusOr<ValidatedConfig> ValidateConfig(
    const v1::DiarizationConfig& config, RpcKind kind,
    const ServiceLimits& limits) {
  ValidatedConfig out;

  // Audio format.
  const v1::AudioFormat& audio = config.audio();
  switch (audio.encoding()) {
    case v1::AUDIO_ENCODING_UNSPECIFIED:
      if (kind == RpcKind::kStream) {
        return Invalid(
            "audio.encoding is unset; a Diarize stream needs raw audio: ",
            audio::kAcceptedRawEncodings);
      }
      out.encoding = v1::ENCODED;
      break;
    case v1::ENCODED:
      if (kind == RpcKind::kStream) {
        return Invalid(
            "audio.encoding ENCODED is accepted by DiarizeFile only; a "
            "Diarize stream needs raw audio: ",
            audio::kAcceptedRawEncodings);
      }
      out.encoding = v1::ENCODED;
      break;
    case v1::LINEAR16:
    case v1::FLOAT32:
    case v1::MULAW:
    case v1::ALAW:
      out.encoding = audio.encoding();
      break;
    default:
      return Invalid("audio.encoding has unknown value ",
                     static_cast<int>(audio.encoding()),
                     "; accepted: ENCODED (DiarizeFile: ",
                     audio::kAcceptedContainers, ") or raw ",
                     audio::kAcceptedRawEncodings);
  }
  if (out.encoding != v1::ENCODED) {
    if (audio.sample_rate_hz() < limits.min_sample_rate_hz ||
        audio.sample_rate_hz() > limits.max_sample_rate_hz) {
      return Invalid("audio.sample_rate_hz is ", audio.sample_rate_hz(),
                     "; raw PCM needs a rate from ", limits.min_sample_rate_hz,
                     " to ", limits.max_sample_rate_hz, " Hz");
    }
    out.sample_rate_hz = audio.sample_rate_hz();
    out.channel_count = audio.channel_count() == 0 ? 1 : audio.channel_count();
    if (out.channel_count < 1 || out.channel_count > limits.max_channel_count) {
      return Invalid("audio.channel_count is ", audio.channel_count(),
                     "; it must be 0 (= 1) or 1 to ", limits.max_channel_count);
    }
  } else {
    out.sample_rate_hz = 0;
    out.channel_count = 0;
  }

  // Channel policy.
  switch (audio.channel_policy()) {
    case v1::CHANNEL_POLICY_UNSPECIFIED:
    case v1::DOWNMIX:
      if (audio.channel_index() != 0) {
        return Invalid("audio.channel_index is ", audio.channel_index(),
                       " but audio.channel_policy is not SELECT_CHANNEL; "
                       "set the policy or leave the index 0");
      }
      out.channel_index = audio::kDownmix;
      break;
    case v1::SELECT_CHANNEL: {
      // Raw audio names its channel count; a file's header is checked at
      // decode (FileDecoder::SelectChannel).
      const int channels = out.encoding == v1::ENCODED
                               ? limits.max_channel_count
                               : out.channel_count;
      if (audio.channel_index() < 0 || audio.channel_index() >= channels) {
        return Invalid("audio.channel_index is ", audio.channel_index(),
                       "; SELECT_CHANNEL needs 0 to ", channels - 1,
                       out.encoding == v1::ENCODED
                           ? " (and a channel the file has)"
                           : " (audio.channel_count - 1)");
      }
      out.channel_index = audio.channel_index();
      break;
    }
    case v1::SEPARATE:
      if (kind == RpcKind::kStream) {
        return Invalid(
            "audio.channel_policy SEPARATE is accepted by DiarizeFile only; "
            "a Diarize stream takes DOWNMIX or SELECT_CHANNEL (open one "
            "stream a channel to diarize them apart)");
      }
      if (audio.channel_index() != 0) {
        return Invalid("audio.channel_index is ", audio.channel_index(),
                       " but audio.channel_policy is SEPARATE (every "
                       "channel); leave the index 0");
      }
      out.separate_channels = true;
      break;
    default:
      return Invalid("audio.channel_policy has unknown value ",
                     static_cast<int>(audio.channel_policy()),
                     "; accepted: DOWNMIX, SELECT_CHANNEL, SEPARATE");
  }

  // Speaker hints.
  if (absl::Status s = ValidateHints(config.speakers(), limits); !s.ok()) {
    return s;
  }
  out.num_speakers = config.speakers().num_speakers();
  out.min_speakers = config.speakers().min_speakers();
  out.max_speakers = config.speakers().max_speakers();

  // Options.
  const v1::DiarizationOptions& opt = config.options();
  switch (opt.quality()) {
    case v1::QUALITY_MODE_UNSPECIFIED:
    case v1::ACCURATE:
      out.fast = false;
      break;
    case v1::FAST:
      out.fast = true;
      break;
    default:
      return Invalid("options.quality has unknown value ",
                     static_cast<int>(opt.quality()));
  }
  out.exclusive = opt.exclusive();
  out.both_views = opt.both_views();
  out.stable_labels = opt.stable_labels();
  out.return_centroids = opt.return_centroids();
  // Partial results exist only on the stream; the unary call ignores them.
  out.partial_results = kind == RpcKind::kStream && opt.partial_results();
  if (opt.partial_interval_s() == 0.0) {
    out.partial_interval_s = limits.default_partial_interval_s;
  } else if (!std::isfinite(opt.partial_interval_s()) ||
             opt.partial_interval_s() < limits.min_partial_interval_s) {
    return Invalid("options.partial_interval_s is ", opt.partial_interval_s(),
                   "; it must be 0 (default ",
                   limits.default_partial_interval_s, ") or at least ",
                   limits.min_partial_interval_s);
  } else {
    out.partial_interval_s = opt.partial_interval_s();
  }

  // Names.
  if (config.request_id().empty()) {
    out.request_id = NewRequestId();
  } else {
    if (absl::Status s = ValidateToken(config.request_id(), "request_id");
        !s.ok()) {
      return s;
    }
    out.request_id = config.request_id();
  }
  if (!config.uri().empty()) {
    if (absl::Status s = ValidateToken(config.uri(), "uri"); !s.ok()) return s;
    out.uri = config.uri();
  }
  return out;
}

audio::PcmFormat ToPcmFormat(const ValidatedConfig& config) {
  audio::PcmFormat f;
  switch (config.encoding) {
    case v1::FLOAT32:
      f.encoding = audio::PcmEncoding::kFloat32;
      break;
    case v1::MULAW:
      f.encoding = audio::PcmEncoding::kMulaw;
      break;
    case v1::ALAW:
      f.encoding = audio::PcmEncoding::kAlaw;
      break;
    default:
      f.encoding = audio::PcmEncoding::kLinear16;
      break;
  }
  f.sample_rate_hz = config.sample_rate_hz;
  f.channel_count = config.channel_count;
  f.channel_index = config.channel_index;
  return f;
}

audio::DecodeLimits ToDecodeLimits(const ServiceLimits& limits) {
  audio::DecodeLimits d;
  d.max_duration_s = limits.max_audio_s_per_request;
  d.min_sample_rate_hz = limits.min_sample_rate_hz;
  d.max_sample_rate_hz = limits.max_sample_rate_hz;
  d.max_channel_count = limits.max_channel_count;
  return d;
}

}  // namespace diarization::server
