// Connection caps and EMFILE recovery for the gRPC listener (issue 39,
// finding 2), by interposing accept4(2) and close(2).
//
// Why by hand: Debian's gRPC 1.51.1 stops accepting for good when accept4
// fails with EMFILE (its listener is not re-armed: CVE-2023-4785, fixed
// upstream in 1.53.2), and it has no option that caps incoming connections
// (GRPC_ARG_MAX_ALLOWED_INCOMING_CONNECTIONS came later). Handing it
// sockets we accepted ourselves (grpc_server_add_channel_from_fd) works for
// plaintext only and loses the peer's address. So the server binary
// defines accept4 and close (the dynamic linker resolves libgrpc's calls to
// them; the binary exports both): for accepts on the gRPC port only, a
// connection over the global cap or its peer's cap is closed at once
// (RST), and EMFILE/ENFILE never reaches gRPC: a spare descriptor is
// given up to accept and refuse the queued connections, and gRPC is told
// EAGAIN, so its listener stays armed and serves the next connection as
// soon as descriptors are free. close() keeps the counts. Other sockets
// (the metrics port) pass through untouched.
#ifndef DIARIZATION_SERVER_ACCEPT_GUARD_H_
#define DIARIZATION_SERVER_ACCEPT_GUARD_H_

#include <cstdint>
#include <string>

namespace diarization::server {

struct AcceptGuardOptions {
  // The gRPC port (accepts on other ports pass through).
  int port = 0;
  // Connections open at once on that port, in all, and from one address
  // (IPv4 or IPv6 without the port). 0: no cap.
  int max_connections = 0;
  int max_connections_per_peer = 0;
};

// Turns the guard on (after the gRPC server is listening). Descriptors up
// to `max_tracked_fd` are counted (the soft open-file limit).
void StartAcceptGuard(const AcceptGuardOptions& options,
                      uint64_t max_tracked_fd);

// Connections the guard counts as open now (for tests and the log).
int AcceptGuardOpenConnections();

// Closes the connection of a call whose peer is `grpc_peer` (gRPC's
// "ipv4:1.2.3.4:5678" / "ipv6:[::1]:5678"), if the guard accepted it:
// shutdown(2) on its socket, so gRPC sees the end of the stream and drops
// the transport with every call on it. The only way to close one
// connection that gRPC 1.51 leaves to its application (it has no per-
// connection GOAWAY API). False when no such connection is open.
bool CloseConnectionOf(const std::string& grpc_peer);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_ACCEPT_GUARD_H_
