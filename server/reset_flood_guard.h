// HTTP/2 rapid reset (CVE-2023-44487; issue 39, finding 5): a client opens
// and cancels streams as fast as it can on one connection. gRPC 1.51 admits
// each one and has no limit on resets, so the reactors count the calls
// cancelled on each connection (OnCancel) here, and a connection that
// cancels more than `max_per_s` calls within one second is closed
// (by the server binary's accept guard, accept_guard.h): every call on it ends,
// and its client has to connect again (where the per-address connection cap
// holds it). Legitimate clients cancel a handful of calls per second.
#ifndef DIARIZATION_SERVER_RESET_FLOOD_GUARD_H_
#define DIARIZATION_SERVER_RESET_FLOOD_GUARD_H_

#include <functional>
#include <string>

namespace diarization::server {

// 0 turns the check off. Set once at start (--max_resets_per_s);
// `close_connection` closes the connection of a peer (the server binary's
// CloseConnectionOf, accept_guard.h) and says whether it found it.
void SetMaxResetsPerSecond(
    int max_per_s,
    std::function<bool(const std::string& grpc_peer)> close_connection);

// A call from `grpc_peer` (context->peer()) was cancelled or reset, or
// refused at admission (a flood that keeps every slot taken is refused
// rather than cancelled): both count toward max_per_s.
void OnCallCancelled(const std::string& grpc_peer);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_RESET_FLOOD_GUARD_H_
