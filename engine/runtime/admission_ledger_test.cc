// AdmissionLedger: the books stay consistent through every path (reserve,
// resize, assign, grow, release, close, reservations moved and dropped), and
// the drain rate and retry hints follow the time the backlog was busy.
#include "engine/runtime/admission_ledger.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace diarization::runtime::internal {
namespace {

constexpr int64_t kS = kSampleRateHz;  // samples per second

std::shared_ptr<AdmissionLedger> MakeLedger(EngineOptions options,
                                            int devices = 2) {
  return std::make_shared<AdmissionLedger>(options, devices,
                                           [] { return 0.0; });
}

// A reservation's ticket, for the calls a job would make (the engine takes
// it by consuming the reservation; tests keep the reservation alive).
uint64_t Ticket(AdmissionLedger& ledger, const std::string& peer,
                int64_t samples, std::vector<Reservation>* keep) {
  auto r = ledger.Reserve(samples, peer);
  EXPECT_TRUE(r.ok()) << r.status();
  keep->push_back(*std::move(r));
  // Tickets are numbered from 1 in the order admitted, and every admission
  // in these tests goes through here.
  return keep->size();
}

TEST(AdmissionLedgerTest, BooksStayConsistent) {
  EngineOptions options;
  options.max_backlog_audio_s = 100;
  options.max_calls_per_peer = 2;
  auto ledger = MakeLedger(options);
  std::vector<Reservation> keep;
  const uint64_t a = Ticket(*ledger, "p", 30 * kS, &keep);
  const uint64_t b = Ticket(*ledger, "q", 10 * kS, &keep);
  EXPECT_EQ(ledger->total_backlog_samples(), 40 * kS);
  // Least loaded: both devices idle -> 0; then 0 has 30 s -> 1.
  EXPECT_EQ(ledger->Assign(a), 0);
  EXPECT_EQ(ledger->Assign(b), 1);
  EXPECT_EQ(ledger->Assign(b), 1);  // idempotent
  EXPECT_EQ(ledger->device_backlog_samples(0), 30 * kS);
  EXPECT_EQ(ledger->device_jobs(1), 1);
  // A stream grows unchecked, even past the limit.
  ledger->Add(b, 80 * kS);
  EXPECT_EQ(ledger->total_backlog_samples(), 120 * kS);
  EXPECT_EQ(ledger->device_backlog_samples(1), 90 * kS);
  // Release clamps to what the ticket holds and says what is left.
  EXPECT_EQ(ledger->Release(a, 10 * kS), 20 * kS);
  EXPECT_EQ(ledger->Release(a, 1000 * kS), 0);
  EXPECT_EQ(ledger->backlog_samples(a), 0);
  ledger->SetBytes(a, 1000);
  ledger->SetBytes(b, 500);
  ledger->SetBytes(a, 700);
  EXPECT_EQ(ledger->total_bytes(), 1200);
  // Closing gives everything back, once.
  ledger->Close(b);
  ledger->Close(b);
  EXPECT_EQ(ledger->total_backlog_samples(), 0);
  EXPECT_EQ(ledger->device_backlog_samples(1), 0);
  EXPECT_EQ(ledger->device_jobs(1), 0);
  EXPECT_EQ(ledger->total_bytes(), 700);
  EXPECT_EQ(ledger->backlog_samples(b), 0);
  // Unknown tickets are no-ops.
  ledger->Add(99, kS);
  EXPECT_EQ(ledger->Release(99, kS), 0);
  EXPECT_EQ(ledger->total_backlog_samples(), 0);
  keep.clear();  // the reservations close a (b was closed already)
  EXPECT_EQ(ledger->total_bytes(), 0);
  EXPECT_EQ(ledger->device_jobs(0), 0);
}

TEST(AdmissionLedgerTest, ReservationsReleaseWhenDroppedOrReplaced) {
  EngineOptions options;
  options.max_backlog_audio_s = 100;
  options.max_calls_per_peer = 1;
  auto ledger = MakeLedger(options);
  {
    auto r = ledger->Reserve(40 * kS, "p");
    ASSERT_TRUE(r.ok());
    EXPECT_DOUBLE_EQ(r->audio_s(), 40.0);
    EXPECT_EQ(r->peer(), "p");
    // The peer's one call is taken.
    EXPECT_EQ(ledger->Reserve(0, "p").status().code(),
              absl::StatusCode::kResourceExhausted);
    Reservation moved = *std::move(r);
    EXPECT_FALSE(r->valid());
    EXPECT_TRUE(moved.valid());
    EXPECT_EQ(ledger->total_backlog_samples(), 40 * kS);
    // Move-assigning over a live reservation releases the old one.
    auto other = ledger->Reserve(10 * kS, "q");
    ASSERT_TRUE(other.ok());
    moved = *std::move(other);
    EXPECT_EQ(ledger->total_backlog_samples(), 10 * kS);
    EXPECT_TRUE(ledger->Reserve(0, "p").ok());  // p's call is free again
  }
  EXPECT_EQ(ledger->total_backlog_samples(), 0);
  // A reservation may outlive whoever made the ledger.
  auto r = ledger->Reserve(5 * kS, "");
  ASSERT_TRUE(r.ok());
  std::weak_ptr<AdmissionLedger> weak = ledger;
  ledger.reset();
  EXPECT_FALSE(weak.expired());  // the reservation holds it
  *r = Reservation();            // releases; the ledger goes
  EXPECT_TRUE(weak.expired());
}

TEST(AdmissionLedgerTest, LimitsAndResize) {
  EngineOptions options;
  options.max_backlog_audio_s = 100;
  options.max_request_backlog_share = 0.5;
  options.max_peer_backlog_audio_s = 40;
  auto ledger = MakeLedger(options);
  EXPECT_EQ(ledger->Reserve(51 * kS, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto r = ledger->Reserve(30 * kS, "p");
  ASSERT_TRUE(r.ok());
  // Growing is checked: p would hold 45 s > 40 s.
  std::vector<Reservation> keep;
  keep.push_back(*std::move(r));
  const uint64_t t = 1;
  EXPECT_EQ(ledger->Resize(t, 45 * kS).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ledger->Resize(t, 55 * kS).code(),
            absl::StatusCode::kInvalidArgument);  // above the share
  EXPECT_TRUE(ledger->Resize(t, 35 * kS).ok());
  EXPECT_TRUE(ledger->Resize(t, 5 * kS).ok());  // shrinking always works
  EXPECT_EQ(ledger->total_backlog_samples(), 5 * kS);
  // A peer at its backlog limit cannot start a stream either.
  ASSERT_TRUE(ledger->Resize(t, 40 * kS).ok());
  EXPECT_EQ(ledger->Reserve(0, "p").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(ledger->Reserve(0, "q").ok());
}

// A principal's calls together hold at most its share of the backlog,
// whichever peers they come from; other principals and calls without one
// are not held by it; closing gives the room back.
TEST(AdmissionLedgerTest, PrincipalBacklogShare) {
  EngineOptions options;
  options.max_backlog_audio_s = 100;
  auto ledger = MakeLedger(options);
  std::vector<Reservation> keep;
  // "batch" may hold 25 s: 20 s from one address, 5 s from another fit.
  auto a = ledger->Reserve(20 * kS, "10.0.0.1", "batch", 0.25);
  ASSERT_TRUE(a.ok()) << a.status();
  keep.push_back(*std::move(a));
  auto b = ledger->Reserve(5 * kS, "10.0.0.2", "batch", 0.25);
  ASSERT_TRUE(b.ok()) << b.status();
  keep.push_back(*std::move(b));
  // 1 s more does not fit, nor does a stream (the token is at its limit).
  auto c = ledger->Reserve(1 * kS, "10.0.0.3", "batch", 0.25);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("\"batch\""), std::string::npos)
      << c.status();
  EXPECT_NE(c.status().message().find("25.0 s"), std::string::npos)
      << c.status();
  EXPECT_TRUE(RetryAfter(c.status()).has_value());
  EXPECT_EQ(ledger->Reserve(0, "10.0.0.3", "batch", 0.25).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Another token, a token without a share and a call without a token fit.
  EXPECT_TRUE(ledger->Reserve(30 * kS, "10.0.0.1", "live", 0.5).ok());
  EXPECT_TRUE(ledger->Reserve(30 * kS, "10.0.0.1", "other", 0.0).ok());
  EXPECT_TRUE(ledger->Reserve(30 * kS, "10.0.0.1").ok());
  // A stream of the token is below the limit once windows are released,
  // and its growth is counted for the token.
  ledger->Release(1, 10 * kS);
  auto stream = ledger->Reserve(0, "10.0.0.3", "batch", 0.25);
  ASSERT_TRUE(stream.ok()) << stream.status();
  keep.push_back(*std::move(stream));
  // Tickets 3-5 were the three reservations above, closed at once.
  ledger->Add(6, 10 * kS);  // "batch" holds 10 + 5 + 10 = 25 s
  EXPECT_EQ(ledger->Reserve(1 * kS, "", "batch", 0.25).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Growing a recording is checked for its token too.
  EXPECT_EQ(ledger->Resize(2, 6 * kS).code(),
            absl::StatusCode::kResourceExhausted);
  // Closing a call gives its share back.
  keep.erase(keep.begin());  // ticket 1, 10 s
  EXPECT_TRUE(ledger->Reserve(9 * kS, "", "batch", 0.25).ok());
}

TEST(AdmissionLedgerTest, DrainRateCountsOnlyBusyTimeAndDrivesTheHint) {
  EngineOptions options;
  options.max_backlog_audio_s = 100;
  auto ledger = MakeLedger(options, 1);
  EXPECT_EQ(ledger->drain_rate(), 0.0);
  // Idle time before any backlog does not count.
  absl::SleepFor(absl::Milliseconds(100));
  std::vector<Reservation> keep;
  const absl::Time t0 = absl::Now();
  const uint64_t t = Ticket(*ledger, "", 2 * kS, &keep);
  const absl::Time t1 = absl::Now();
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time t2 = absl::Now();
  ledger->Release(t, 2 * kS);
  const absl::Time t3 = absl::Now();
  // About 10 s of audio per second: 2 s drained in 0.2 s of busy time.
  const double rate = ledger->drain_rate();
  EXPECT_GE(rate, 2.0 / absl::ToDoubleSeconds(t3 - t0) * 0.999);
  EXPECT_LE(rate, 2.0 / absl::ToDoubleSeconds(t2 - t1) * 1.001);
  // Idle again: the rate holds.
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_DOUBLE_EQ(ledger->drain_rate(), rate);
  // Backlog full: the hint is the excess over that rate.
  const uint64_t full = Ticket(*ledger, "", 90 * kS, &keep);
  (void)full;
  const double before = ledger->drain_rate();
  auto refused = ledger->Reserve(40 * kS, "");
  const double after = ledger->drain_rate();
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  const std::optional<double> hint = RetryAfter(refused.status());
  ASSERT_TRUE(hint.has_value());
  EXPECT_GT(30.0 / before, 1.0);  // above the 1 s floor, so it is seen
  EXPECT_GE(*hint, 30.0 / before * 0.999);
  EXPECT_LE(*hint, 30.0 / after * 1.001);
}

}  // namespace
}  // namespace diarization::runtime::internal
