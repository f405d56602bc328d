// Internal: the books of admission control. One place holds every counter
// that admission reads — the engine backlog, each device's backlog and jobs,
// each peer's and each principal's calls and backlog, the bytes jobs hold,
// and the measured drain rate — so they cannot drift apart.
//
// Every admitted call is a ticket. A ticket is opened by admission (Open,
// checked against the limits), may be assigned to a device (Assign), grows
// with a stream's audio (Add, never refused), shrinks as windows go through
// both networks (Release) and is closed exactly once (Close: by the job's
// completion, or by an unused Reservation's destructor). Closing gives back
// whatever the ticket still holds.
//
// It publishes the engine backlog gauge (diarization_backlog_audio_seconds)
// itself, after every change of the backlog, so the gauge is the ledger's
// number whoever changed it (a job, a reservation given back).
//
// Thread-safe. Its mutex is a leaf: the ledger calls nothing while holding
// it, so callers may hold their own locks (JobState::mu) when calling in.
// The gauge is set after the mutex is released, under a second mutex
// (gauge_mu_ → mu_) that keeps the last value set the newest.
#ifndef DIARIZATION_ENGINE_RUNTIME_ADMISSION_LEDGER_H_
#define DIARIZATION_ENGINE_RUNTIME_ADMISSION_LEDGER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/runtime/engine_options.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/reservation.h"

namespace diarization::runtime::internal {

// The process's resident set from /proc/self/statm, bytes (0 if unreadable).
int64_t ReadProcessRssBytes();

class AdmissionLedger : public std::enable_shared_from_this<AdmissionLedger> {
 public:
  // `fallback_rate`: audio seconds per second to assume before any drain was
  // measured (e.g. the devices' recent RTFx); called without the lock.
  // `metrics`: where the backlog gauge goes; may be null (none).
  AdmissionLedger(const EngineOptions& options, int num_devices,
                  std::function<double()> fallback_rate,
                  std::shared_ptr<Metrics> metrics = nullptr);

  // Admission of a new call bringing `samples` at once (0 for a stream).
  // `principal` (a token's name; empty: none) may hold at most
  // `principal_backlog_share` (0: no own limit) of the backlog with all its
  // calls together. Errors: INVALID_ARGUMENT (above the per-request share),
  // RESOURCE_EXHAUSTED with the retry hint (memory, the peer's calls or
  // backlog, the principal's share, the engine backlog).
  absl::StatusOr<Reservation> Reserve(int64_t samples, std::string peer,
                                      std::string principal = "",
                                      double principal_backlog_share = 0.0);

  // Sets an unassigned ticket's backlog to `samples` (a recording that
  // decoded to more or fewer samples than it reserved). Growing is checked
  // like Reserve; shrinking always succeeds.
  absl::Status Resize(uint64_t ticket, int64_t samples);
  // Assigns the ticket to the least-loaded device (least backlog, then
  // fewest jobs, then lowest index) and counts a job there; returns it.
  int Assign(uint64_t ticket);
  // A stream's new audio: never refused.
  void Add(uint64_t ticket, int64_t samples);
  // Processed audio leaves the backlog (clamped to what the ticket holds)
  // and counts toward the drain rate. Returns what the ticket still holds.
  int64_t Release(uint64_t ticket, int64_t samples);
  // The bytes the ticket's job holds now.
  void SetBytes(uint64_t ticket, int64_t bytes);
  // Ends the ticket (idempotent): gives back its backlog, bytes, peer call
  // and device job.
  void Close(uint64_t ticket);

  int64_t backlog_samples(uint64_t ticket) const;
  int64_t total_backlog_samples() const;
  int64_t device_backlog_samples(int device) const;
  int device_jobs(int device) const;
  int64_t total_bytes() const;
  // Audio seconds per second drained over the recent busy time (the time the
  // backlog was not empty); 0 before any was measured.
  double drain_rate() const;

 private:
  struct Ticket {
    std::string peer;
    std::string principal;
    // The principal's own backlog limit as this call was admitted with it
    // (0: none).
    int64_t principal_max_samples = 0;
    int device = -1;
    int64_t samples = 0;
    int64_t bytes = 0;
  };
  // A peer's or a principal's calls and backlog.
  struct Peer {
    int calls = 0;
    int64_t samples = 0;
  };
  // Busy-time clock and released-audio counter at one moment.
  struct RateMark {
    double busy_s;
    double released_s;
  };

  // Checks admitting `samples` more for the caller `t` (peer, principal;
  // `new_call`: also a call). `fallback`: fallback_rate_(), read before the
  // lock was taken.
  absl::Status CheckLocked(int64_t samples, const Ticket& t, bool new_call,
                           double fallback) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The share of the drain rate `p`'s calls get (batches take windows
  // round-robin across jobs).
  double CallShareLocked(const Peer& p) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED saying `why`, with the retry hint: `excess_s` of
  // backlog to drain at `share` of the drain rate.
  absl::Status ExhaustedLocked(const std::string& why, double excess_s,
                               double share, double fallback) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Changes a ticket's backlog by `delta` everywhere it is counted.
  void MoveLocked(Ticket& t, int64_t delta) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Advances the busy clock to now (before the backlog changes).
  void TickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double DrainRateLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Ticket* FindLocked(uint64_t ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the backlog gauge to the total now; called without mu_.
  void PublishBacklog() ABSL_LOCKS_EXCLUDED(mu_);
  class GaugeUpdate;

  const int64_t max_backlog_samples_;
  const int64_t max_request_samples_;
  const int max_calls_per_peer_;
  const int64_t max_peer_backlog_samples_;
  const int64_t max_job_bytes_;
  const int64_t max_rss_bytes_;
  const std::function<int64_t()> rss_bytes_;
  const std::function<double()> fallback_rate_;
  const std::shared_ptr<Metrics> metrics_;

  absl::Mutex gauge_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  mutable absl::Mutex mu_;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Ticket> tickets_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Peer> principals_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> device_samples_ ABSL_GUARDED_BY(mu_);
  std::vector<int> device_jobs_ ABSL_GUARDED_BY(mu_);
  int64_t total_samples_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Drain rate: busy seconds (backlog > 0) and audio seconds released, with
  // marks about every second of busy time over the last kRateWindow.
  absl::Time last_tick_ ABSL_GUARDED_BY(mu_);
  double busy_s_ ABSL_GUARDED_BY(mu_) = 0.0;
  double released_s_ ABSL_GUARDED_BY(mu_) = 0.0;
  std::deque<RateMark> marks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::runtime::internal

#endif  // DIARIZATION_ENGINE_RUNTIME_ADMISSION_LEDGER_H_
