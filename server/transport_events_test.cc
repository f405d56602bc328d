#include "server/transport_events.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace diarization::server {
namespace {

using ::testing::HasSubstr;

// A burst of lines passes, then the limit refuses and counts; the next line
// written learns how many were left out.
TEST(LogRateLimitTest, BurstThenRefusesAndCounts) {
  LogRateLimit& limit = LogRateLimit::Get();
  limit.Configure(/*per_second=*/0.001, /*burst=*/5);
  constexpr int kKind = 8;  // RESOURCE_EXHAUSTED
  int allowed = 0;
  for (int i = 0; i < 50; ++i) allowed += limit.Allow(kKind) ? 1 : 0;
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(limit.TakeSuppressed(kKind), 45u);
  EXPECT_EQ(limit.TakeSuppressed(kKind), 0u);
  EXPECT_EQ(limit.suppressed_total(kKind), 45u);
  // Another kind has its own bucket.
  EXPECT_TRUE(limit.Allow(1));
  const std::string text =
      prometheus::TextSerializer().Serialize(TransportMetrics().Collect());
  EXPECT_THAT(text, HasSubstr("diarization_log_lines_suppressed_total{kind="
                              "\"RESOURCE_EXHAUSTED\"} 45"));
  EXPECT_THAT(text, HasSubstr("diarization_transport_events_total{event="
                              "\"unread_response\"} 0"));
  limit.Configure(0, 1);  // off
  EXPECT_TRUE(limit.Allow(kKind));
}

TEST(TransportEventsTest, CountsShowOnMetrics) {
  CountTransportEvent(TransportEvent::kResetFloodClosed);
  CountTransportEvent(TransportEvent::kResetFloodClosed);
  EXPECT_EQ(TransportEventCount(TransportEvent::kResetFloodClosed), 2u);
  const std::string text =
      prometheus::TextSerializer().Serialize(TransportMetrics().Collect());
  EXPECT_THAT(text, HasSubstr("diarization_transport_events_total{event="
                              "\"reset_flood_closed\"} 2"));
}

}  // namespace
}  // namespace diarization::server
