#include "server/request_validation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::server {
namespace {

using ::testing::HasSubstr;

v1::DiarizationConfig StreamConfig() {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(16000);
  return c;
}

void ExpectInvalid(const v1::DiarizationConfig& c, RpcKind kind,
                   const std::string& needle) {
  auto r = ValidateConfig(c, kind, ServiceLimits{});
  ASSERT_FALSE(r.ok()) << "accepted: " << c.ShortDebugString();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
}

TEST(ValidateConfig, StreamDefaultsAreFilledIn) {
  auto r = ValidateConfig(StreamConfig(), RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->encoding, v1::LINEAR16);
  EXPECT_EQ(r->sample_rate_hz, 16000);
  EXPECT_EQ(r->channel_count, 1);  // 0 means 1
  EXPECT_EQ(r->frame_bytes(), 2);
  EXPECT_EQ(r->uri, "audio");
  EXPECT_EQ(r->partial_interval_s, 5.0);
  EXPECT_FALSE(r->fast);
  EXPECT_EQ(r->request_id.rfind("srv-", 0), 0u) << r->request_id;
  EXPECT_EQ(r->request_id.size(), 20u);
}

TEST(ValidateConfig, UnaryWithoutConfigMeansEncoded) {
  auto r =
      ValidateConfig(v1::DiarizationConfig(), RpcKind::kUnary, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->encoding, v1::ENCODED);
  EXPECT_EQ(r->frame_bytes(), 0);
  EXPECT_FALSE(r->partial_results);
}

TEST(ValidateConfig, StreamRejectsUnsetAndEncoded) {
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_audio()->set_encoding(v1::AUDIO_ENCODING_UNSPECIFIED);
  ExpectInvalid(c, RpcKind::kStream, "audio.encoding is unset");
  c.mutable_audio()->set_encoding(v1::ENCODED);
  ExpectInvalid(c, RpcKind::kStream, "DiarizeFile only");
  c.mutable_audio()->set_encoding(static_cast<v1::AudioEncoding>(42));
  ExpectInvalid(c, RpcKind::kUnary, "unknown value 42");
}

TEST(ValidateConfig, SampleRateAndChannels) {
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_audio()->set_sample_rate_hz(0);
  ExpectInvalid(c, RpcKind::kStream, "audio.sample_rate_hz is 0");
  c.mutable_audio()->set_sample_rate_hz(7999);
  ExpectInvalid(c, RpcKind::kStream, "8000 to 192000");
  c.mutable_audio()->set_sample_rate_hz(192001);
  ExpectInvalid(c, RpcKind::kStream, "192001");
  c.mutable_audio()->set_sample_rate_hz(44100);
  c.mutable_audio()->set_channel_count(33);
  ExpectInvalid(c, RpcKind::kStream, "audio.channel_count is 33");
  c.mutable_audio()->set_channel_count(-1);
  ExpectInvalid(c, RpcKind::kStream, "audio.channel_count is -1");
  c.mutable_audio()->set_channel_count(2);
  c.mutable_audio()->set_encoding(v1::FLOAT32);
  auto r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->frame_bytes(), 8);
  // Raw PCM in the unary call is validated the same way.
  c.mutable_audio()->set_sample_rate_hz(100);
  ExpectInvalid(c, RpcKind::kUnary, "audio.sample_rate_hz is 100");
  // ... but ENCODED ignores the raw fields.
  c.mutable_audio()->set_encoding(v1::ENCODED);
  EXPECT_TRUE(ValidateConfig(c, RpcKind::kUnary, ServiceLimits{}).ok());
}

TEST(ValidateConfig, TelephonyEncodings) {
  for (const auto& [encoding, expected] :
       {std::pair{v1::MULAW, audio::PcmEncoding::kMulaw},
        std::pair{v1::ALAW, audio::PcmEncoding::kAlaw}}) {
    v1::DiarizationConfig c = StreamConfig();
    c.mutable_audio()->set_encoding(encoding);
    c.mutable_audio()->set_sample_rate_hz(8000);
    c.mutable_audio()->set_channel_count(2);
    for (RpcKind kind : {RpcKind::kStream, RpcKind::kUnary}) {
      auto r = ValidateConfig(c, kind, ServiceLimits{});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->encoding, encoding);
      EXPECT_EQ(r->frame_bytes(), 2);  // one byte a sample
      const audio::PcmFormat f = ToPcmFormat(*r);
      EXPECT_EQ(f.encoding, expected);
      EXPECT_EQ(f.sample_rate_hz, 8000);
      EXPECT_EQ(f.channel_count, 2);
    }
  }
  // An unknown encoding names every accepted one.
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_audio()->set_encoding(static_cast<v1::AudioEncoding>(42));
  ExpectInvalid(c, RpcKind::kUnary, "MULAW, ALAW");
  c.mutable_audio()->set_encoding(v1::AUDIO_ENCODING_UNSPECIFIED);
  ExpectInvalid(c, RpcKind::kStream, "MULAW, ALAW");
}

TEST(ValidateConfig, ChannelPolicy) {
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_audio()->set_channel_count(2);
  auto r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->channel_index, audio::kDownmix);  // unset means DOWNMIX
  EXPECT_EQ(ToPcmFormat(*r).channel_index, audio::kDownmix);
  c.mutable_audio()->set_channel_policy(v1::SELECT_CHANNEL);
  c.mutable_audio()->set_channel_index(1);
  r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->channel_index, 1);
  EXPECT_EQ(ToPcmFormat(*r).channel_index, 1);
  c.mutable_audio()->set_channel_index(2);
  ExpectInvalid(c, RpcKind::kStream, "audio.channel_index is 2");
  c.mutable_audio()->set_channel_index(-1);
  ExpectInvalid(c, RpcKind::kUnary, "SELECT_CHANNEL needs 0 to 1");
  // ENCODED: any index below max_channel_count; the header decides later.
  c.mutable_audio()->set_encoding(v1::ENCODED);
  c.mutable_audio()->set_channel_index(5);
  r = ValidateConfig(c, RpcKind::kUnary, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->channel_index, 5);
  c.mutable_audio()->set_channel_index(32);
  ExpectInvalid(c, RpcKind::kUnary, "0 to 31");
  // An index without SELECT_CHANNEL, and unknown policies.
  c = StreamConfig();
  c.mutable_audio()->set_channel_index(1);
  ExpectInvalid(c, RpcKind::kStream, "not SELECT_CHANNEL");
  c.mutable_audio()->set_channel_index(0);
  c.mutable_audio()->set_channel_policy(static_cast<v1::ChannelPolicy>(9));
  ExpectInvalid(c, RpcKind::kStream, "channel_policy has unknown value 9");
  // SEPARATE: DiarizeFile only, no index.
  c = StreamConfig();
  c.mutable_audio()->set_channel_count(2);
  c.mutable_audio()->set_channel_policy(v1::SEPARATE);
  ExpectInvalid(c, RpcKind::kStream, "DiarizeFile only");
  r = ValidateConfig(c, RpcKind::kUnary, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->separate_channels);
  EXPECT_EQ(r->channel_index, audio::kDownmix);
  c.mutable_audio()->set_channel_index(1);
  ExpectInvalid(c, RpcKind::kUnary, "SEPARATE (every channel)");
}

TEST(ValidateConfig, SpeakerHints) {
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_speakers()->set_num_speakers(-1);
  ExpectInvalid(c, RpcKind::kStream, "speakers.num_speakers is -1");
  c.mutable_speakers()->set_num_speakers(65);
  ExpectInvalid(c, RpcKind::kStream, "speakers.num_speakers is 65");
  c.mutable_speakers()->set_num_speakers(0);
  c.mutable_speakers()->set_min_speakers(4);
  c.mutable_speakers()->set_max_speakers(3);
  ExpectInvalid(c, RpcKind::kStream, "min_speakers (4) is greater than");
  c.mutable_speakers()->set_max_speakers(0);
  c.mutable_speakers()->set_num_speakers(2);
  ExpectInvalid(c, RpcKind::kStream,
                "min_speakers (4) is greater than speakers.num_speakers (2)");
  c.mutable_speakers()->set_min_speakers(1);
  c.mutable_speakers()->set_max_speakers(1);
  ExpectInvalid(c, RpcKind::kStream,
                "max_speakers (1) is less than speakers.num_speakers (2)");
  c.mutable_speakers()->set_max_speakers(3);
  auto r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->num_speakers, 2);
  EXPECT_EQ(r->min_speakers, 1);
  EXPECT_EQ(r->max_speakers, 3);
}

TEST(ValidateConfig, Options) {
  v1::DiarizationConfig c = StreamConfig();
  c.mutable_options()->set_quality(static_cast<v1::QualityMode>(9));
  ExpectInvalid(c, RpcKind::kStream, "options.quality has unknown value 9");
  c.mutable_options()->set_quality(v1::FAST);
  c.mutable_options()->set_partial_interval_s(0.5);
  ExpectInvalid(c, RpcKind::kStream, "options.partial_interval_s is 0.5");
  c.mutable_options()->set_partial_interval_s(std::nan(""));
  ExpectInvalid(c, RpcKind::kStream, "options.partial_interval_s");
  c.mutable_options()->set_partial_interval_s(2.5);
  c.mutable_options()->set_partial_results(true);
  c.mutable_options()->set_exclusive(true);
  auto r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->fast);
  EXPECT_TRUE(r->partial_results);
  EXPECT_TRUE(r->exclusive);
  EXPECT_EQ(r->partial_interval_s, 2.5);
}

TEST(ValidateConfig, RequestIdAndUri) {
  v1::DiarizationConfig c = StreamConfig();
  c.set_request_id("has space");
  ExpectInvalid(c, RpcKind::kStream, "request_id has character code 32");
  c.set_request_id(std::string(129, 'a'));
  ExpectInvalid(c, RpcKind::kStream, "request_id has 129 characters");
  c.set_request_id("caller-7\x7f");
  ExpectInvalid(c, RpcKind::kStream, "character code 127");
  c.set_request_id(std::string(128, 'a'));
  c.set_uri("meeting\t1");
  ExpectInvalid(c, RpcKind::kStream, "uri has character code 9");
  c.set_uri("meeting_1");
  auto r = ValidateConfig(c, RpcKind::kStream, ServiceLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->request_id, std::string(128, 'a'));
  EXPECT_EQ(r->uri, "meeting_1");
}

TEST(NewRequestId, IsFreshAndValid) {
  const std::string a = NewRequestId(), b = NewRequestId();
  EXPECT_NE(a, b);
  EXPECT_TRUE(ValidateToken(a, "request_id").ok());
}

TEST(ValidateLimits, RejectsNonsense) {
  ServiceLimits l;
  EXPECT_TRUE(ValidateLimits(l).ok());
  l.max_concurrent_streams = 0;
  EXPECT_FALSE(ValidateLimits(l).ok());
  l = ServiceLimits{};
  l.max_audio_s_per_request = std::nan("");
  EXPECT_FALSE(ValidateLimits(l).ok());
  l = ServiceLimits{};
  l.max_message_bytes = 100;
  EXPECT_FALSE(ValidateLimits(l).ok());
}

}  // namespace
}  // namespace diarization::server
