#include "server/service_state.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace diarization::server {

const char* ServingStateName(ServingState state) {
  switch (state) {
    case ServingState::kLoading:
      return "loading";
    case ServingState::kServing:
      return "serving";
    case ServingState::kDraining:
      return "draining";
  }
  return "unknown";
}

CallSlot& CallSlot::operator=(CallSlot&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = other.state_;
    connection_ = std::move(other.connection_);
    id_ = other.id_;
    busy_ = other.busy_;
    admitted_ = std::move(other.admitted_);
    other.state_ = nullptr;
    principal_ = std::move(other.principal_);
    other.busy_ = false;
  }
  return *this;
}

CallSlot::~CallSlot() { Release(); }

void CallSlot::Release() {
  if (state_ != nullptr) {
    const bool admitted = admitted_ != nullptr && admitted_->exchange(false);
    state_->ReleaseCall(admitted, busy_, id_, connection_);
  }
  state_ = nullptr;
  principal_ = auth::PrincipalCalls::Slot();
  busy_ = false;
  admitted_ = nullptr;
}

void CallSlot::ReleaseAdmission() {
  if (state_ == nullptr) return;
  principal_ = auth::PrincipalCalls::Slot();
  if (admitted_ != nullptr && admitted_->exchange(false)) {
    state_->ReleaseAdmission(id_, connection_);
  }
}

void CallSlot::ReleaseAdmissionOnCancel() {
  if (state_ == nullptr) return;
  if (admitted_ != nullptr && admitted_->exchange(false)) {
    state_->ReleaseAdmission(id_, connection_);
  }
}

void CallSlot::MarkBusy() {
  if (state_ == nullptr || busy_) return;
  busy_ = true;
  state_->MarkBusy();
}

ServiceState::ServiceState(ServiceLimits limits, std::string version,
                           std::string commit,
                           std::shared_ptr<runtime::Metrics> metrics,
                           ServiceThreads threads)
    : limits_(limits),
      version_(std::move(version)),
      commit_(std::move(commit)),
      metrics_(std::move(metrics)),
      threads_(threads) {}

void ServiceState::SetHealthService(grpc::HealthCheckServiceInterface* health) {
  absl::MutexLock lock(&mu_);
  health_ = health;
  UpdateHealthLocked();
}

void ServiceState::UpdateHealthLocked() {
  // The overall status ("") and our service's status move together.
  if (health_ != nullptr) {
    const bool serving = state_ == ServingState::kServing;
    health_->SetServingStatus(serving);
    health_->SetServingStatus("diarization.v1.Diarization", serving);
    // For liveness probes: SERVING whenever the gRPC port answers at all
    // (loading and draining too, which must not restart the pod), so a
    // listener that stopped accepting fails the probe where a TCP probe,
    // answered by the kernel's listen queue, passed (issue 39).
    health_->SetServingStatus("diarization.liveness", true);
  }
}

void ServiceState::SetServing(std::shared_ptr<runtime::Engine> engine,
                              std::vector<v1::ModelInfo> models) {
  absl::MutexLock lock(&mu_);
  engine_ = std::move(engine);
  models_ = std::move(models);
  if (state_ == ServingState::kLoading) state_ = ServingState::kServing;
  UpdateHealthLocked();
}

void ServiceState::BeginDrain() {
  absl::MutexLock lock(&mu_);
  state_ = ServingState::kDraining;
  UpdateHealthLocked();
}

void ServiceState::SetTokens(std::shared_ptr<const auth::TokenStore> tokens) {
  tokens_ = std::move(tokens);
}

absl::StatusOr<CallSlot> ServiceState::AdmitCall(
    const grpc::ServerContextBase* context) {
  auth::PrincipalCalls::Slot principal;
  if (tokens_ != nullptr && context != nullptr) {
    absl::StatusOr<std::shared_ptr<const auth::Principal>> who =
        auth::CallPrincipal(*context, *tokens_);
    if (!who.ok()) return who.status();
    absl::StatusOr<auth::PrincipalCalls::Slot> slot =
        principal_calls_.Admit(*std::move(who));
    if (!slot.ok()) return slot.status();
    principal = *std::move(slot);
  }
  absl::MutexLock lock(&mu_);
  switch (state_) {
    case ServingState::kLoading:
      return absl::UnavailableError(
          "the server is loading its models; retry when health reports "
          "SERVING");
    case ServingState::kDraining:
      return absl::UnavailableError(
          "the server is draining (shutting down); retry on another replica");
    case ServingState::kServing:
      break;
  }
  // A call its client has already reset (a rapid-reset flood's, by the
  // time its handler runs) takes no slot.
  if (context != nullptr && context->IsCancelled()) {
    // As ClientGoneStatus (call_context.h) says what the client saw.
    const auto deadline = context->deadline();
    if (deadline != std::chrono::system_clock::time_point::max() &&
        std::chrono::system_clock::now() + std::chrono::milliseconds(250) >=
            deadline) {
      return absl::DeadlineExceededError(
          "the client's deadline passed before the result was ready");
    }
    return absl::CancelledError("the client cancelled the call");
  }
  // A call of a connection closed for resetting calls: its handler ran
  // after the close (see ReleaseConnection); it must not take a slot again.
  if (context != nullptr && !closed_connections_.empty()) {
    auto it = closed_connections_.find(context->peer());
    if (it != closed_connections_.end() &&
        absl::Now() - it->second < kClosedConnectionMemory) {
      return absl::CancelledError(
          "the call's connection was closed: it reset calls faster than "
          "--max_resets_per_s");
    }
  }
  if (admitted_calls_ >= limits_.max_concurrent_streams) {
    ReleaseCancelledLocked();
  }
  if (admitted_calls_ >= limits_.max_concurrent_streams) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many concurrent calls: ", admitted_calls_,
                     " are open and max_concurrent_streams is ",
                     limits_.max_concurrent_streams, "; retry later"));
  }
  std::string connection;
  if (context != nullptr && limits_.max_calls_per_connection > 0) {
    connection = context->peer();
    if (calls_by_connection_[connection] >=
        limits_.max_calls_per_connection) {
      ReleaseCancelledLocked();
    }
    int& n = calls_by_connection_[connection];
    if (n >= limits_.max_calls_per_connection) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "too many calls on this connection: ", n,
          " are open and max_streams_per_connection is ",
          limits_.max_calls_per_connection, "; retry later"));
    }
    ++n;
  }
  ++open_calls_;
  ++admitted_calls_;
  const uint64_t id = next_call_id_++;
  auto admitted = std::make_shared<std::atomic<bool>>(true);
  if (context != nullptr) {
    admitted_[id] = {.context = context,
                     .admitted = admitted,
                     .connection = connection};
  }
  return CallSlot(this, std::move(principal), std::move(connection), id,
                  std::move(admitted));
}

void ServiceState::ReleaseConnection(const std::string& grpc_peer,
                                     bool closed) {
  absl::MutexLock lock(&mu_);
  if (closed) {
    const absl::Time now = absl::Now();
    absl::erase_if(closed_connections_, [now](const auto& entry) {
      return now - entry.second >= kClosedConnectionMemory;
    });
    closed_connections_[grpc_peer] = now;
  }
  for (auto it = admitted_.begin(); it != admitted_.end();) {
    AdmittedCall& call = it->second;
    if (call.connection == grpc_peer && call.admitted->exchange(false)) {
      --admitted_calls_;
      ForgetConnectionCallLocked(call.connection);
      admitted_.erase(it++);
    } else {
      ++it;
    }
  }
}

void ServiceState::ReleaseCancelledLocked() {
  for (auto it = admitted_.begin(); it != admitted_.end();) {
    AdmittedCall& call = it->second;
    if (call.context->IsCancelled() && call.admitted->exchange(false)) {
      --admitted_calls_;
      ForgetConnectionCallLocked(call.connection);
      admitted_.erase(it++);
    } else {
      ++it;
    }
  }
}

void ServiceState::ForgetConnectionCallLocked(const std::string& connection) {
  if (connection.empty()) return;
  auto it = calls_by_connection_.find(connection);
  if (it != calls_by_connection_.end() && --it->second <= 0) {
    calls_by_connection_.erase(it);
  }
}

void ServiceState::ReleaseCall(bool admitted, bool busy, uint64_t id,
                               const std::string& connection) {
  absl::MutexLock lock(&mu_);
  admitted_.erase(id);
  --open_calls_;
  if (admitted) {
    --admitted_calls_;
    ForgetConnectionCallLocked(connection);
  }
  if (busy) --busy_calls_;
}

void ServiceState::ReleaseAdmission(uint64_t id,
                                    const std::string& connection) {
  absl::MutexLock lock(&mu_);
  admitted_.erase(id);
  --admitted_calls_;
  ForgetConnectionCallLocked(connection);
}

void ServiceState::MarkBusy() {
  absl::MutexLock lock(&mu_);
  ++busy_calls_;
}

bool ServiceState::WaitForNoBusyCalls(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return busy_calls_ == 0;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

int ServiceState::busy_calls() const {
  absl::MutexLock lock(&mu_);
  return busy_calls_;
}

bool ServiceState::WaitForNoCalls(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return open_calls_ == 0;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

ServingState ServiceState::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

int ServiceState::open_calls() const {
  absl::MutexLock lock(&mu_);
  return open_calls_;
}

std::shared_ptr<runtime::Engine> ServiceState::engine() const {
  absl::MutexLock lock(&mu_);
  return engine_;
}

std::vector<v1::ModelInfo> ServiceState::models() const {
  absl::MutexLock lock(&mu_);
  return models_;
}

}  // namespace diarization::server
