// Who sent a call, and what that caller may do: the principal behind a
// bearer token (the token file, token_file.h). The token auth processor
// (token_auth.h) has already let the call in when a handler runs; the
// handler asks CallPrincipal for the caller's limits.
//
// Why not gRPC AuthContext properties: the AuthContext an
// AuthMetadataProcessor fills is the connection's (gRPC 1.51 passes the
// channel's context to every call on the connection), so a property set for
// one call would be seen by every other call sharing that connection, whose
// token may differ. The principal is therefore looked up per call from the
// call's own `authorization` metadata (ADR 0066).
#ifndef DIARIZATION_SERVER_AUTH_PRINCIPAL_H_
#define DIARIZATION_SERVER_AUTH_PRINCIPAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_context.h"

namespace diarization::server::auth {

// What a token may call. "metrics" is the /metrics scrape endpoint.
enum class Method : uint32_t {
  kDiarize = 1u << 0,
  kDiarizeFile = 1u << 1,
  kGetInfo = 1u << 2,
  kReflection = 1u << 3,
  kMetrics = 1u << 4,
  kCreateVoiceprint = 1u << 5,
};
inline constexpr uint32_t kAllMethods = 0x3f;

// The name used in the token file's "methods" list.
const char* MethodName(Method method);

// A principal's own limits, on top of the server-wide ones. 0: no own limit.
struct PrincipalLimits {
  // Diarize + DiarizeFile calls of this principal open at once (enforced by
  // ServiceState::AdmitCall with PrincipalCalls below).
  int max_concurrent_calls = 0;
  // Largest share of --max_backlog_audio_s this principal's accepted,
  // unprocessed audio may hold with all its calls together, in (0, 1]:
  // the reactors pass it to the engine's admission (AdmissionRequest::
  // principal_backlog_share), which counts the backlog per principal.
  double max_backlog_share = 0;
};

struct Principal {
  // From the token file; safe to log (never the token).
  std::string name;
  // Bit set of Method.
  uint32_t methods = 0;
  PrincipalLimits limits;

  bool Allows(Method m) const {
    return (methods & static_cast<uint32_t>(m)) != 0;
  }
};

class TokenStore;

// The principal of a call, from its `authorization: Bearer` metadata.
// UNAUTHENTICATED when it carries no valid token (e.g. revoked by a reload
// since the processor admitted it).
absl::StatusOr<std::shared_ptr<const Principal>> CallPrincipal(
    const grpc::ServerContextBase& context, const TokenStore& tokens);

// Counts the open calls of each principal against its max_concurrent_calls.
// Thread-safe.
class PrincipalCalls {
 public:
  // One admitted call; releases its count when destroyed. Movable.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot();
    // Null when auth is off.
    const std::shared_ptr<const Principal>& principal() const {
      return principal_;
    }

   private:
    friend class PrincipalCalls;
    PrincipalCalls* owner_ = nullptr;
    std::shared_ptr<const Principal> principal_;
  };

  // RESOURCE_EXHAUSTED when `principal` already has max_concurrent_calls
  // calls open.
  absl::StatusOr<Slot> Admit(std::shared_ptr<const Principal> principal);

  int open_calls(const std::string& name) const;

 private:
  void Release(const std::string& name);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_PRINCIPAL_H_
