#include "engine/runtime/reservation.h"

#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "engine/runtime/admission_ledger.h"

namespace diarization::runtime {

Reservation::Reservation(std::shared_ptr<internal::AdmissionLedger> ledger,
                         uint64_t ticket, double audio_s, std::string peer)
    : ledger_(std::move(ledger)),
      ticket_(ticket),
      audio_s_(audio_s),
      peer_(std::move(peer)) {}

Reservation::Reservation(Reservation&& other) noexcept
    : ledger_(std::move(other.ledger_)),
      ticket_(other.ticket_),
      audio_s_(other.audio_s_),
      peer_(std::move(other.peer_)) {
  other.ledger_ = nullptr;
}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    if (ledger_ != nullptr) ledger_->Close(ticket_);
    ledger_ = std::move(other.ledger_);
    other.ledger_ = nullptr;
    ticket_ = other.ticket_;
    audio_s_ = other.audio_s_;
    peer_ = std::move(other.peer_);
  }
  return *this;
}

Reservation::~Reservation() {
  if (ledger_ != nullptr) ledger_->Close(ticket_);
}

uint64_t Reservation::Consume() {
  ledger_ = nullptr;
  return ticket_;
}

std::optional<double> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  double seconds = 0.0;
  if (!absl::SimpleAtod(std::string(*payload), &seconds)) return std::nullopt;
  return seconds;
}

}  // namespace diarization::runtime
