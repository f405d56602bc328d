// What every RPC handler asks before it starts work: is the service loading,
// serving or draining, which engine runs the jobs, and may one more call be
// admitted under max_concurrent_streams. It also drives the standard health
// service (grpc.health.v1): NOT_SERVING while models load and while
// draining, SERVING in between.
#ifndef DIARIZATION_SERVER_SERVICE_STATE_H_
#define DIARIZATION_SERVER_SERVICE_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/thread_pool.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_context.h"
#include "server/auth/principal.h"
#include "server/auth/token_store.h"
#include "server/call_timer.h"
#include "server/limits.h"

namespace diarization::server {

enum class ServingState { kLoading, kServing, kDraining };

// "loading", "serving", "draining" (ServerInfo.state).
const char* ServingStateName(ServingState state);

class ServiceState;

// One admitted Diarize/DiarizeFile call; releases its slot (and its
// principal's) when destroyed, or earlier with ReleaseAdmission().
class CallSlot {
 public:
  CallSlot() = default;
  CallSlot(ServiceState* state, auth::PrincipalCalls::Slot principal,
           std::string connection, uint64_t id,
           std::shared_ptr<std::atomic<bool>> admitted)
      : state_(state),
        principal_(std::move(principal)),
        connection_(std::move(connection)),
        id_(id),
        admitted_(std::move(admitted)) {}
  CallSlot(CallSlot&& other) noexcept
      : state_(other.state_),
        principal_(std::move(other.principal_)),
        connection_(std::move(other.connection_)),
        id_(other.id_),
        busy_(other.busy_),
        admitted_(std::move(other.admitted_)) {
    other.state_ = nullptr;
    other.busy_ = false;
  }
  CallSlot& operator=(CallSlot&& other) noexcept;
  ~CallSlot();

  // Who made the call and its own limits (auth/principal.h); null when
  // token auth is off.
  const std::shared_ptr<const auth::Principal>& principal() const {
    return principal_.principal();
  }
  // The call now holds accepted work (a stream's job, an upload being
  // decoded): a drain waits for it. A call that never does (a stream that
  // has not sent its config) is cut at once by a drain. Idempotent.
  void MarkBusy();
  // The call is about to send its final status. Its place under
  // max_concurrent_streams (and its principal's max_concurrent_calls) is
  // given back now, not when gRPC destroys the reactor: a client that opens
  // its next call as soon as it has this call's status must not be refused
  // for a call that has already answered it (OnDone runs after the client
  // can see the status). The call still counts for a drain
  // (WaitForNoCalls, WaitForNoBusyCalls) until it is destroyed, so the
  // final message is flushed before the server stops. principal() is null
  // afterwards. Idempotent.
  void ReleaseAdmission();
  // The same from any thread, at once, for a call the client cancelled or
  // reset (issue 39: under a reset flood the reactors' own release waited
  // behind the flood on the work pool, and legitimate calls were refused
  // for slots no client held). The principal's place stays until the slot
  // is destroyed (principal() may be in use on the call's own thread).
  void ReleaseAdmissionOnCancel();

 private:
  void Release();
  ServiceState* state_ = nullptr;
  auth::PrincipalCalls::Slot principal_;
  // The connection (gRPC's peer) the call is counted on; empty: none.
  std::string connection_;
  // The call's entry in ServiceState::admitted_.
  uint64_t id_ = 0;
  bool busy_ = false;
  // True while the call counts in ServiceState::admitted_calls_ (from
  // admission until ReleaseAdmission, or until the state finds the call
  // cancelled); shared with the state, whoever clears it first releases.
  // Null for an empty slot.
  std::shared_ptr<std::atomic<bool>> admitted_;
};

// The threads the reactors use, owned by GrpcServer.
struct ServiceThreads {
  // Stream messages and reactor deletes: short tasks only.
  runtime::ThreadPool* stream_pool = nullptr;
  // Whole-file decoding (bounded queue, lower priority).
  runtime::ThreadPool* decode_pool = nullptr;
  // Per-call timers (a stream's config deadline).
  CallTimer* timer = nullptr;
};

// Thread-safe.
class ServiceState {
 public:
  ServiceState(ServiceLimits limits, std::string version, std::string commit,
               std::shared_ptr<runtime::Metrics> metrics,
               ServiceThreads threads);

  // Called once, after the gRPC server started; may be null (tests).
  void SetHealthService(grpc::HealthCheckServiceInterface* health);

  // Models are loaded and the engine runs: state → serving, health SERVING.
  void SetServing(std::shared_ptr<runtime::Engine> engine,
                  std::vector<v1::ModelInfo> models);

  // state → draining, health NOT_SERVING; new calls get UNAVAILABLE.
  void BeginDrain();

  // Token auth on (before serving; null: off): AdmitCall looks up each
  // call's principal and holds it to its max_concurrent_calls.
  void SetTokens(std::shared_ptr<const auth::TokenStore> tokens);

  // Admits one Diarize/DiarizeFile call. UNAVAILABLE while loading or
  // draining; RESOURCE_EXHAUSTED when max_concurrent_streams calls are open
  // or the caller's token has its max_concurrent_calls open; with tokens
  // on, UNAUTHENTICATED when `context` carries no valid token (revoked
  // since the auth processor let the call in).
  absl::StatusOr<CallSlot> AdmitCall(
      const grpc::ServerContextBase* context = nullptr);

  // The connection `grpc_peer` is being closed (reset_flood_guard.h): its
  // admitted calls give their slots back now; their cancellations follow.
  // With `closed` (its socket was shut down), calls of that connection whose
  // handlers run later are refused without a slot (AdmitCall: CANCELLED):
  // under a reset flood gRPC runs the handlers of the streams it had read
  // before the close seconds later, behind its own callback queue, and
  // before it reports them cancelled, so each closed connection took its
  // max_calls_per_connection slots again (issue 39: the victim was refused,
  // "32 are open", two closed connections holding 16 each). The peer is
  // remembered for kClosedConnectionMemory.
  void ReleaseConnection(const std::string& grpc_peer, bool closed);
  // How long a closed connection's peer ("ipv4:1.2.3.4:5678") is refused:
  // the server closed it, so its address and port pair stays in TIME_WAIT
  // on this side for 60 s (Linux) and no new connection reuses it earlier.
  static constexpr absl::Duration kClosedConnectionMemory = absl::Seconds(60);
  // Waits until no admitted call remains or `deadline` passes; true when
  // none remains.
  bool WaitForNoCalls(absl::Time deadline);
  // The same for calls that hold accepted work (CallSlot::MarkBusy).
  bool WaitForNoBusyCalls(absl::Time deadline);

  ServingState state() const;
  int open_calls() const;
  int busy_calls() const;
  // Null until SetServing.
  std::shared_ptr<runtime::Engine> engine() const;
  std::vector<v1::ModelInfo> models() const;

  const ServiceLimits& limits() const { return limits_; }
  const std::string& version() const { return version_; }
  const std::string& commit() const { return commit_; }
  runtime::Metrics* metrics() const { return metrics_.get(); }
  runtime::ThreadPool* pool() const { return threads_.stream_pool; }
  runtime::ThreadPool* decode_pool() const { return threads_.decode_pool; }
  CallTimer* timer() const { return threads_.timer; }

 private:
  friend class CallSlot;
  void ReleaseCall(bool admitted, bool busy, uint64_t id,
                   const std::string& connection);
  void ReleaseAdmission(uint64_t id, const std::string& connection);
  // Caller holds mu_.
  void ForgetConnectionCallLocked(const std::string& connection)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back the slots of admitted calls that gRPC already knows are
  // cancelled but whose reactors have not heard yet (OnCancel waits behind
  // gRPC's own callback queue: under a reset flood, seconds).
  void ReleaseCancelledLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkBusy();
  void UpdateHealthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ServiceLimits limits_;
  const std::string version_;
  const std::string commit_;
  const std::shared_ptr<runtime::Metrics> metrics_;
  const ServiceThreads threads_;

  mutable absl::Mutex mu_;
  ServingState state_ ABSL_GUARDED_BY(mu_) = ServingState::kLoading;
  int open_calls_ ABSL_GUARDED_BY(mu_) = 0;
  // Calls that hold a place under max_concurrent_streams: open_calls_ less
  // those that have sent their final status (CallSlot::ReleaseAdmission).
  int admitted_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_calls_ ABSL_GUARDED_BY(mu_) = 0;
  // Admitted calls still counted (the context is valid while admitted:
  // a reactor releases its admission before it finishes the call).
  struct AdmittedCall {
    const grpc::ServerContextBase* context = nullptr;
    std::shared_ptr<std::atomic<bool>> admitted;
    std::string connection;
  };
  absl::flat_hash_map<uint64_t, AdmittedCall> admitted_ ABSL_GUARDED_BY(mu_);
  uint64_t next_call_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Admitted calls per connection (ServiceLimits::max_calls_per_connection).
  absl::flat_hash_map<std::string, int> calls_by_connection_
      ABSL_GUARDED_BY(mu_);
  // Connections closed by ReleaseConnection(…, closed=true) and when.
  absl::flat_hash_map<std::string, absl::Time> closed_connections_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<runtime::Engine> engine_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ModelInfo> models_ ABSL_GUARDED_BY(mu_);
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::shared_ptr<const auth::TokenStore> tokens_;
  auth::PrincipalCalls principal_calls_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_SERVICE_STATE_H_
