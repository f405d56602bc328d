#include "server/request_log.h"

#include <cmath>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace diarization::server {
namespace {

TEST(RequestLog, OneJsonLineWithTheFields) {
  RequestLogEntry e;
  e.request_id = "req-1";
  e.method = "Diarize";
  e.code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  e.message = "backlog \"full\"\nretry";
  e.audio_s = 61.25;
  e.processing_s = 0.5;
  e.rtfx = 122.5;
  e.device = "cpu";
  const std::string line = FormatRequestLog(e);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  // Exactly one line: the message's newline is escaped.
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["request_id"], "req-1");
  EXPECT_EQ(j["method"], "Diarize");
  EXPECT_EQ(j["code"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(j["message"], "backlog \"full\"\nretry");
  EXPECT_DOUBLE_EQ(j["audio_s"].get<double>(), 61.25);
  EXPECT_DOUBLE_EQ(j["processing_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rtfx"].get<double>(), 122.5);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_TRUE(j.contains("ts"));
}

TEST(RequestLog, ExtraFieldsFollowInTheirOrderAndStayValidJson) {
  RequestLogEntry e;
  e.method = "Diarize";
  e.extra = {{"tail_s", 0.125},
             {"tail_host_wait_s", 0.0625},
             {"tail_finals_queued", 3},
             {"tail_delivery_s", NAN}};
  const std::string line = FormatRequestLog(e);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_DOUBLE_EQ(j["tail_s"].get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(j["tail_host_wait_s"].get<double>(), 0.0625);
  EXPECT_DOUBLE_EQ(j["tail_finals_queued"].get<double>(), 3.0);
  EXPECT_TRUE(j["tail_delivery_s"].is_null());
  EXPECT_EQ(j["method"], "Diarize");
  // Without extra fields none is written.
  const nlohmann::json plain = nlohmann::json::parse(FormatRequestLog({}));
  EXPECT_FALSE(plain.contains("tail_s"));
}

TEST(RequestLog, NonFiniteNumbersAndBadUtf8StayValidJson) {
  RequestLogEntry e;
  e.request_id = "x\xff\xfe";
  e.rtfx = std::nan("");
  e.processing_s = INFINITY;
  const nlohmann::json j = nlohmann::json::parse(FormatRequestLog(e));
  EXPECT_TRUE(j["rtfx"].is_null());
  EXPECT_TRUE(j["processing_s"].is_null());
  EXPECT_TRUE(j["request_id"].is_string());
}

}  // namespace
}  // namespace diarization::server
