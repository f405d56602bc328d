#include "engine/runtime/admission_ledger.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "engine/common/shapes.h"
#include "engine/common/status_macros.h"

namespace diarization::runtime {

namespace internal {
namespace {

// Busy seconds of history behind the drain rate, and the spacing of marks.
constexpr double kRateWindowS = 60.0;
constexpr double kRateMarkS = 1.0;
constexpr int64_t kWindowSamples = 10 * kSampleRateHz;

double Seconds(int64_t samples) {
  return static_cast<double>(samples) / kSampleRateHz;
}

int64_t Samples(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * kSampleRateHz));
}

}  // namespace

int64_t ReadProcessRssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

AdmissionLedger::AdmissionLedger(const EngineOptions& options, int num_devices,
                                 std::function<double()> fallback_rate,
                                 std::shared_ptr<Metrics> metrics)
    : max_backlog_samples_(Samples(options.max_backlog_audio_s)),
      max_request_samples_(Samples(options.max_backlog_audio_s *
                                   options.max_request_backlog_share)),
      max_calls_per_peer_(options.max_calls_per_peer),
      max_peer_backlog_samples_(Samples(options.max_peer_backlog_audio_s)),
      max_job_bytes_(options.max_job_memory_bytes),
      max_rss_bytes_(options.max_process_rss_bytes),
      rss_bytes_(options.process_rss_bytes ? options.process_rss_bytes
                                           : ReadProcessRssBytes),
      fallback_rate_(std::move(fallback_rate)),
      metrics_(std::move(metrics)),
      device_samples_(num_devices, 0),
      device_jobs_(num_devices, 0),
      last_tick_(absl::Now()) {
  PublishBacklog();
}

// Declared before a mutator's MutexLock, so that it runs after the lock is
// released: the ledger's mutex stays a leaf.
class AdmissionLedger::GaugeUpdate {
 public:
  explicit GaugeUpdate(AdmissionLedger* ledger) : ledger_(ledger) {}
  ~GaugeUpdate() { ledger_->PublishBacklog(); }

 private:
  AdmissionLedger* const ledger_;
};

void AdmissionLedger::PublishBacklog() {
  if (metrics_ == nullptr) return;
  // One publisher at a time, each reading the total after the change that
  // called it: the last one to run sets the newest value.
  absl::MutexLock gauge_lock(&gauge_mu_);
  metrics_->SetBacklogAudioSeconds(Seconds(total_backlog_samples()));
}

absl::StatusOr<Reservation> AdmissionLedger::Reserve(
    int64_t samples, std::string peer, std::string principal,
    double principal_backlog_share) {
  if (samples > max_request_samples_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%.1f s of audio exceed the engine's limit for one recording of "
        "%.1f s (max_request_backlog_share of the %.1f s backlog); stream it "
        "instead or split it",
        Seconds(samples), Seconds(max_request_samples_),
        Seconds(max_backlog_samples_)));
  }
  // Outside the lock: the rss reader and the fallback rate call out.
  const int64_t rss = max_rss_bytes_ > 0 ? rss_bytes_() : 0;
  const double fallback = fallback_rate_ ? fallback_rate_() : 0.0;
  GaugeUpdate gauge(this);
  absl::MutexLock lock(&mu_);
  if (max_rss_bytes_ > 0 && rss > max_rss_bytes_) {
    // Memory comes back as jobs end: wait for the backlog to shrink by the
    // excess fraction.
    const double frac = static_cast<double>(rss - max_rss_bytes_) / rss;
    return ExhaustedLocked(
        absl::StrFormat("the server's resident memory (%d MiB) is above its "
                        "limit of %d MiB",
                        rss >> 20, max_rss_bytes_ >> 20),
        frac * Seconds(total_samples_), 1.0, fallback);
  }
  Ticket caller;
  caller.peer = peer;
  caller.principal = std::move(principal);
  if (!caller.principal.empty() && principal_backlog_share > 0.0) {
    caller.principal_max_samples =
        std::max<int64_t>(1, Samples(Seconds(max_backlog_samples_) *
                                     std::min(1.0, principal_backlog_share)));
  }
  absl::Status s = CheckLocked(samples, caller, /*new_call=*/true, fallback);
  if (!s.ok()) return s;
  const uint64_t id = next_ticket_++;
  Ticket& t = tickets_[id];
  t = std::move(caller);
  if (!t.peer.empty()) ++peers_[t.peer].calls;
  if (!t.principal.empty()) ++principals_[t.principal].calls;
  MoveLocked(t, samples);
  return Reservation(shared_from_this(), id, Seconds(samples), std::move(peer));
}

double AdmissionLedger::CallShareLocked(const Peer& p) const {
  const int calls = static_cast<int>(tickets_.size());
  return calls > 0
             ? std::min(1.0, std::max(1, p.calls) / static_cast<double>(calls))
             : 1.0;
}

absl::Status AdmissionLedger::CheckLocked(int64_t samples, const Ticket& t,
                                          bool new_call, double fallback) {
  const std::string& peer = t.peer;
  if (max_job_bytes_ > 0 && total_bytes_ > max_job_bytes_) {
    const double frac =
        static_cast<double>(total_bytes_ - max_job_bytes_) / total_bytes_;
    return ExhaustedLocked(
        absl::StrFormat("jobs hold %d MiB of memory, above the engine's "
                        "limit of %d MiB",
                        total_bytes_ >> 20, max_job_bytes_ >> 20),
        frac * Seconds(total_samples_), 1.0, fallback);
  }
  if (!peer.empty()) {
    auto it = peers_.find(peer);
    const Peer p = it == peers_.end() ? Peer{} : it->second;
    // Batches take windows round-robin across jobs, so a caller's calls
    // drain at their share of the drain rate.
    const double share = CallShareLocked(p);
    if (new_call && max_calls_per_peer_ > 0 && p.calls >= max_calls_per_peer_) {
      // One of its calls has to end: about its average backlog.
      return ExhaustedLocked(
          absl::StrFormat("this caller already has %d calls open (limit %d)",
                          p.calls, max_calls_per_peer_),
          Seconds(p.samples) / std::max(1, p.calls), share, fallback);
    }
    if (max_peer_backlog_samples_ > 0 &&
        (samples > 0 ? p.samples + samples > max_peer_backlog_samples_
                     : p.samples >= max_peer_backlog_samples_)) {
      return ExhaustedLocked(
          absl::StrFormat("this caller's backlog is %.1f s of audio (limit "
                          "%.1f s) and the request adds %.1f s",
                          Seconds(p.samples),
                          Seconds(max_peer_backlog_samples_), Seconds(samples)),
          Seconds(p.samples + samples - max_peer_backlog_samples_), share,
          fallback);
    }
  }
  if (t.principal_max_samples > 0) {
    auto it = principals_.find(t.principal);
    const Peer p = it == principals_.end() ? Peer{} : it->second;
    const int64_t limit = t.principal_max_samples;
    // Like the engine backlog: a recording must fit, a stream needs the
    // principal below its limit (its audio is then paced by flow control).
    if (samples > 0 ? p.samples + samples > limit : p.samples >= limit) {
      return ExhaustedLocked(
          absl::StrFormat("the backlog of this caller's token \"%s\" is %.1f s "
                          "of audio (its max_backlog_share allows %.1f s) and "
                          "the request adds %.1f s",
                          t.principal, Seconds(p.samples), Seconds(limit),
                          Seconds(samples)),
          Seconds(p.samples - limit + (samples > 0 ? samples : kWindowSamples)),
          CallShareLocked(p), fallback);
    }
  }
  const bool full = samples > 0
                        ? total_samples_ + samples > max_backlog_samples_
                        : total_samples_ >= max_backlog_samples_;
  if (full) {
    return ExhaustedLocked(
        absl::StrFormat("engine backlog is %.1f s of audio (limit %.1f s) and "
                        "this request adds %.1f s",
                        Seconds(total_samples_), Seconds(max_backlog_samples_),
                        Seconds(samples)),
        // A stream needs room for at least its first window.
        Seconds(total_samples_ - max_backlog_samples_ +
                (samples > 0 ? samples : kWindowSamples)),
        1.0, fallback);
  }
  return absl::OkStatus();
}

absl::Status AdmissionLedger::ExhaustedLocked(const std::string& why,
                                              double excess_s, double share,
                                              double fallback) const {
  double rate = DrainRateLocked();
  if (rate <= 0.0) rate = fallback;
  // Nothing measured and no device activity: assume real time.
  if (rate <= 0.0) rate = 1.0;
  rate *= share;
  const double retry_s = std::max(1.0, std::max(0.0, excess_s) / rate);
  absl::Status status = absl::ResourceExhaustedError(absl::StrFormat(
      "%s; the backlog drains at about %.1f s of audio per second, retry "
      "after about %.0f s",
      why, rate, std::ceil(retry_s)));
  status.SetPayload(kRetryAfterPayloadUrl,
                    absl::Cord(absl::StrFormat("%.3f", retry_s)));
  return status;
}

AdmissionLedger::Ticket* AdmissionLedger::FindLocked(uint64_t ticket) {
  auto it = tickets_.find(ticket);
  return it == tickets_.end() ? nullptr : &it->second;
}

absl::Status AdmissionLedger::Resize(uint64_t ticket, int64_t samples) {
  const double fallback = fallback_rate_ ? fallback_rate_() : 0.0;
  GaugeUpdate gauge(this);
  absl::MutexLock lock(&mu_);
  Ticket* t = FindLocked(ticket);
  if (t == nullptr) {
    return absl::FailedPreconditionError("the reservation has ended");
  }
  const int64_t extra = samples - t->samples;
  if (extra > 0) {
    if (samples > max_request_samples_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%.1f s of audio exceed the engine's limit for one recording of "
          "%.1f s; stream it instead or split it",
          Seconds(samples), Seconds(max_request_samples_)));
    }
    RETURN_IF_ERROR(CheckLocked(extra, *t, /*new_call=*/false, fallback));
  }
  MoveLocked(*t, extra);
  return absl::OkStatus();
}

int AdmissionLedger::Assign(uint64_t ticket) {
  absl::MutexLock lock(&mu_);
  Ticket* t = FindLocked(ticket);
  if (t == nullptr) return 0;
  if (t->device >= 0) return t->device;
  int best = 0;
  for (int i = 1; i < static_cast<int>(device_samples_.size()); ++i) {
    if (std::make_pair(device_samples_[i], device_jobs_[i]) <
        std::make_pair(device_samples_[best], device_jobs_[best])) {
      best = i;
    }
  }
  t->device = best;
  device_samples_[best] += t->samples;
  ++device_jobs_[best];
  return best;
}

void AdmissionLedger::Add(uint64_t ticket, int64_t samples) {
  GaugeUpdate gauge(this);
  absl::MutexLock lock(&mu_);
  if (Ticket* t = FindLocked(ticket)) MoveLocked(*t, samples);
}

int64_t AdmissionLedger::Release(uint64_t ticket, int64_t samples) {
  GaugeUpdate gauge(this);
  absl::MutexLock lock(&mu_);
  Ticket* t = FindLocked(ticket);
  if (t == nullptr) return 0;
  const int64_t n = std::clamp<int64_t>(samples, 0, t->samples);
  MoveLocked(*t, -n);
  released_s_ += Seconds(n);
  return t->samples;
}

void AdmissionLedger::SetBytes(uint64_t ticket, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  Ticket* t = FindLocked(ticket);
  if (t == nullptr) return;
  total_bytes_ += bytes - t->bytes;
  t->bytes = bytes;
}

void AdmissionLedger::Close(uint64_t ticket) {
  GaugeUpdate gauge(this);
  absl::MutexLock lock(&mu_);
  Ticket* t = FindLocked(ticket);
  if (t == nullptr) return;
  MoveLocked(*t, -t->samples);
  total_bytes_ -= t->bytes;
  if (t->device >= 0) --device_jobs_[t->device];
  if (!t->peer.empty()) {
    auto it = peers_.find(t->peer);
    if (--it->second.calls == 0) peers_.erase(it);
  }
  if (!t->principal.empty()) {
    auto it = principals_.find(t->principal);
    if (--it->second.calls == 0) principals_.erase(it);
  }
  tickets_.erase(ticket);
}

void AdmissionLedger::MoveLocked(Ticket& t, int64_t delta) {
  if (delta == 0) return;
  TickLocked();
  t.samples += delta;
  total_samples_ += delta;
  if (t.device >= 0) device_samples_[t.device] += delta;
  if (!t.peer.empty()) peers_[t.peer].samples += delta;
  if (!t.principal.empty()) principals_[t.principal].samples += delta;
}

void AdmissionLedger::TickLocked() {
  const absl::Time now = absl::Now();
  if (total_samples_ > 0) busy_s_ += absl::ToDoubleSeconds(now - last_tick_);
  last_tick_ = now;
  if (marks_.empty() || busy_s_ - marks_.back().busy_s >= kRateMarkS) {
    marks_.push_back(RateMark{busy_s_, released_s_});
  }
  // Keep one mark at least kRateWindowS behind, as the base.
  while (marks_.size() > 1 && busy_s_ - marks_[1].busy_s >= kRateWindowS) {
    marks_.pop_front();
  }
}

double AdmissionLedger::DrainRateLocked() const {
  double busy = busy_s_;
  if (total_samples_ > 0) {
    busy += absl::ToDoubleSeconds(absl::Now() - last_tick_);
  }
  if (marks_.empty()) return 0.0;
  const RateMark& base = marks_.front();
  const double span = busy - base.busy_s;
  const double released = released_s_ - base.released_s;
  if (span < 0.05 || released <= 0.0) return 0.0;
  return released / span;
}

int64_t AdmissionLedger::backlog_samples(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  auto it = tickets_.find(ticket);
  return it == tickets_.end() ? 0 : it->second.samples;
}

int64_t AdmissionLedger::total_backlog_samples() const {
  absl::MutexLock lock(&mu_);
  return total_samples_;
}

int64_t AdmissionLedger::device_backlog_samples(int device) const {
  absl::MutexLock lock(&mu_);
  return device_samples_[device];
}

int AdmissionLedger::device_jobs(int device) const {
  absl::MutexLock lock(&mu_);
  return device_jobs_[device];
}

int64_t AdmissionLedger::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

double AdmissionLedger::drain_rate() const {
  absl::MutexLock lock(&mu_);
  return DrainRateLocked();
}

}  // namespace internal
}  // namespace diarization::runtime
