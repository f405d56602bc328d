// Admission of a new call from the caller's side: what it asks
// (AdmissionRequest), what it holds once admitted (Reservation), and the
// retry hint a refusal carries (RetryAfter). The books behind them are the
// engine's AdmissionLedger (admission_ledger.h).
#ifndef DIARIZATION_ENGINE_RUNTIME_RESERVATION_H_
#define DIARIZATION_ENGINE_RUNTIME_RESERVATION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace diarization::runtime {

namespace internal {
class AdmissionLedger;
class EngineImpl;
}  // namespace internal

// What a new call asks of admission control (Engine::Reserve).
struct AdmissionRequest {
  // Seconds of audio the call brings at once: a recording's duration (from
  // its header, before decoding). 0 for a stream, whose audio is counted as
  // it arrives.
  double audio_s = 0.0;
  // Who is asking (an authenticated principal, else the peer address); the
  // key of the per-peer limits. Empty: not subject to per-peer limits.
  std::string peer;
  // The caller's authenticated principal (a token's name; empty: none) and
  // its own limit: all calls of one principal together may hold at most
  // this share of max_backlog_audio_s (in (0, 1]; 0 = no own limit). Checked
  // like the engine backlog: a recording must fit under it, a stream is
  // admitted while the principal is below it.
  std::string principal;
  double principal_backlog_share = 0.0;
};

// Admitted capacity for one call, held until a job consumes it (Submit,
// StartJob) or it is destroyed unused (which gives it back). Move-only;
// thread-compatible. May outlive the Engine (then it releases nothing).
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation();

  // False for a default-constructed or consumed reservation.
  bool valid() const { return ledger_ != nullptr; }
  double audio_s() const { return audio_s_; }
  const std::string& peer() const { return peer_; }

 private:
  friend class internal::AdmissionLedger;
  friend class internal::EngineImpl;
  Reservation(std::shared_ptr<internal::AdmissionLedger> ledger,
              uint64_t ticket, double audio_s, std::string peer);
  // Hands the ticket to a job; the reservation becomes invalid.
  uint64_t Consume();

  std::shared_ptr<internal::AdmissionLedger> ledger_;
  uint64_t ticket_ = 0;
  double audio_s_ = 0.0;
  std::string peer_;
};

// The retry hint carried by RESOURCE_EXHAUSTED statuses from the engine:
// an estimate of the seconds until the request would be admitted (the
// backlog excess over its limit / the measured drain rate of the backlog,
// the caller's fair share of it for per-peer limits; at least 1 s). nullopt
// for statuses without it. The server maps it to gRPC (e.g. a
// "retry-after-s" trailing metadata entry or google.rpc.RetryInfo).
std::optional<double> RetryAfter(const absl::Status& status);
// The absl::Status payload URL that holds it (decimal seconds as text).
inline constexpr char kRetryAfterPayloadUrl[] =
    "type.googleapis.com/diarization.RetryAfterSeconds";

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_RESERVATION_H_
