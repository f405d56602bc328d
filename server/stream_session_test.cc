#include "server/stream_session.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::server {
namespace {

using ::testing::HasSubstr;

// Records what the session asks of the job.
class RecordingSink : public StreamJobSink {
 public:
  absl::Status Start(const ValidatedConfig& config) override {
    calls.push_back("start");
    started_rate = config.sample_rate_hz;
    return start_status;
  }
  absl::Status Append(std::span<const float> samples,
                      const CropEdges&) override {
    calls.push_back("append");
    appended += samples.size();
    return append_status;
  }
  absl::Status Finish() override {
    calls.push_back("finish");
    return absl::OkStatus();
  }
  std::vector<std::string> calls;
  size_t appended = 0;
  int started_rate = 0;
  absl::Status start_status, append_status;
};

v1::DiarizeRequest Config(int rate = 16000) {
  v1::DiarizeRequest r;
  r.mutable_config()->mutable_audio()->set_encoding(v1::LINEAR16);
  r.mutable_config()->mutable_audio()->set_sample_rate_hz(rate);
  r.mutable_config()->set_request_id("abc");
  return r;
}

v1::DiarizeRequest Audio(size_t bytes) {
  v1::DiarizeRequest r;
  r.set_audio(std::string(bytes, '\0'));
  return r;
}

TEST(StreamSession, ConfigAudioEnd) {
  RecordingSink sink;
  StreamSession session(ServiceLimits{}, &sink);
  ASSERT_TRUE(session.OnMessage(Config()).ok());
  EXPECT_TRUE(session.has_config());
  EXPECT_EQ(session.sent_request_id(), "abc");
  ASSERT_TRUE(session.OnMessage(Audio(3200)).ok());
  ASSERT_TRUE(session.OnMessage(Audio(3)).ok());  // a frame and a half byte
  ASSERT_TRUE(session.OnMessage(Audio(1)).ok());
  ASSERT_TRUE(session.OnEndOfInput().ok());
  EXPECT_EQ(sink.appended, 1602u);
  EXPECT_DOUBLE_EQ(session.appended_s(), 1602.0 / 16000);
  EXPECT_EQ(sink.calls, (std::vector<std::string>{"start", "append", "append",
                                                  "append", "finish"}));
  EXPECT_TRUE(session.finished());
}

TEST(StreamSession, OutOfOrderMessagesAreInvalidAndSticky) {
  {
    RecordingSink sink;
    StreamSession session(ServiceLimits{}, &sink);
    absl::Status s = session.OnMessage(Audio(10));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("must carry config"));
    // Sticky: a config after the error changes nothing.
    EXPECT_EQ(session.OnMessage(Config()), s);
    EXPECT_EQ(session.OnEndOfInput(), s);
    EXPECT_TRUE(sink.calls.empty());
  }
  {
    RecordingSink sink;
    StreamSession session(ServiceLimits{}, &sink);
    ASSERT_TRUE(session.OnMessage(Config()).ok());
    absl::Status s = session.OnMessage(Config());
    EXPECT_THAT(s.message(), HasSubstr("config was sent twice"));
    EXPECT_EQ(session.OnMessage(Audio(2)), s);
    EXPECT_EQ(sink.calls, std::vector<std::string>{"start"});
  }
  {
    RecordingSink sink;
    StreamSession session(ServiceLimits{}, &sink);
    EXPECT_THAT(session.OnMessage(v1::DiarizeRequest()).message(),
                HasSubstr("carries nothing"));
  }
  {
    RecordingSink sink;
    StreamSession session(ServiceLimits{}, &sink);
    EXPECT_THAT(session.OnEndOfInput().message(),
                HasSubstr("ended before its first DiarizeRequest"));
  }
}

TEST(StreamSession, PartialFrameAtTheEndIsInvalidAndNotFinished) {
  RecordingSink sink;
  StreamSession session(ServiceLimits{}, &sink);
  ASSERT_TRUE(session.OnMessage(Config()).ok());
  ASSERT_TRUE(session.OnMessage(Audio(5)).ok());
  absl::Status s = session.OnEndOfInput();
  EXPECT_THAT(s.message(), HasSubstr("partial frame"));
  EXPECT_FALSE(session.finished());
  EXPECT_EQ(sink.calls, (std::vector<std::string>{"start", "append"}));
}

TEST(StreamSession, BadConfigNeverStartsAJob) {
  RecordingSink sink;
  StreamSession session(ServiceLimits{}, &sink);
  EXPECT_EQ(session.OnMessage(Config(4000)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(sink.calls.empty());
  EXPECT_FALSE(session.has_config());
}

TEST(StreamSession, JobRefusalsAreTheJobsStatus) {
  RecordingSink sink;
  sink.start_status = absl::UnavailableError("draining");
  StreamSession session(ServiceLimits{}, &sink);
  EXPECT_EQ(session.OnMessage(Config()).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(session.has_config());

  RecordingSink sink2;
  sink2.append_status = absl::CancelledError("gone");
  StreamSession session2(ServiceLimits{}, &sink2);
  ASSERT_TRUE(session2.OnMessage(Config()).ok());
  EXPECT_EQ(session2.OnMessage(Audio(100)).code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(session2.OnEndOfInput().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(sink2.calls, (std::vector<std::string>{"start", "append"}));
}

TEST(StreamSession, TooMuchAudioIsRefused) {
  ServiceLimits limits;
  limits.max_audio_s_per_request = 1.0;
  RecordingSink sink;
  StreamSession session(limits, &sink);
  ASSERT_TRUE(session.OnMessage(Config()).ok());
  ASSERT_TRUE(session.OnMessage(Audio(32000)).ok());
  EXPECT_THAT(session.OnMessage(Audio(2)).message(), HasSubstr("too long"));
  EXPECT_EQ(sink.appended, 16000u);
}

}  // namespace
}  // namespace diarization::server
