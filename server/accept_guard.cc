#include "server/accept_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/transport_events.h"

namespace diarization::server {
namespace {

// Direct system calls: the wrappers below must not call themselves.
int RawClose(int fd) { return static_cast<int>(syscall(SYS_close, fd)); }
int RawAccept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  return static_cast<int>(syscall(SYS_accept4, fd, addr, len, flags));
}

struct Guard {
  std::atomic<bool> on{false};
  int port = 0;
  int max_connections = 0;
  int max_per_peer = 0;
  // tracked[fd] != 0: an accepted gRPC connection the counts include.
  std::atomic<uint8_t>* tracked = nullptr;
  uint64_t tracked_size = 0;
  std::atomic<int> open{0};
  absl::Mutex mu;
  absl::flat_hash_map<int, std::string> peer_of_fd ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, int> per_peer ABSL_GUARDED_BY(mu);
  // "address:port" (gRPC's peer without its scheme) → descriptor.
  absl::flat_hash_map<std::string, int> fd_of_endpoint ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<int, std::string> endpoint_of_fd ABSL_GUARDED_BY(mu);
  // Given up to accept (and refuse) a connection when descriptors run out.
  std::atomic<int> spare{-1};
};

Guard& G() {
  static Guard* const g = new Guard();
  return *g;
}

int LocalPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  if (a.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  }
  if (a.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  }
  return -1;
}

// The peer's address ("1.2.3.4", "::1"; an IPv4-mapped IPv6 address as
// IPv4, as gRPC names it) and its "address:port" in gRPC's peer form
// ("1.2.3.4:5678", "[::1]:5678").
std::pair<std::string, std::string> PeerAddress(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {};
  char text[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
    return {text, std::string(text) + ":" + std::to_string(port)};
  }
  if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    port = ntohs(v6->sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text));
      return {text, std::string(text) + ":" + std::to_string(port)};
    }
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    return {text, "[" + std::string(text) + "]:" + std::to_string(port)};
  }
  return {};
}

// Closes with an RST (SO_LINGER 0): the client learns at once.
void Refuse(int fd) {
  linger l{.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  RawClose(fd);
}

// Out of descriptors: refuse the queued connections with the spare one, so
// the listen queue does not hold clients that will never be served.
void RefuseQueued(int listener) {
  Guard& g = G();
  const int spare = g.spare.exchange(-1);
  if (spare < 0) return;
  RawClose(spare);
  for (int i = 0; i < 4096; ++i) {
    const int c = RawAccept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) break;
    Refuse(c);
  }
  g.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// Counts `fd` unless a cap is reached; false: refuse it.
bool Admit(int fd) {
  Guard& g = G();
  if (static_cast<uint64_t>(fd) >= g.tracked_size) return true;  // untracked
  if (g.max_connections > 0 && g.open.load() >= g.max_connections) {
    CountTransportEvent(TransportEvent::kConnectionRefusedGlobal);
    return false;
  }
  auto [peer, endpoint] = PeerAddress(fd);
  absl::MutexLock lock(&g.mu);
  int& n = g.per_peer[peer];
  if (g.max_per_peer > 0 && n >= g.max_per_peer) {
    if (n == 0) g.per_peer.erase(peer);
    CountTransportEvent(TransportEvent::kConnectionRefusedPeer);
    return false;
  }
  ++n;
  g.peer_of_fd[fd] = std::move(peer);
  g.fd_of_endpoint[endpoint] = fd;
  g.endpoint_of_fd[fd] = std::move(endpoint);
  g.open.fetch_add(1);
  g.tracked[fd].store(1);
  return true;
}

void Forget(int fd) {
  Guard& g = G();
  absl::MutexLock lock(&g.mu);
  if (g.tracked[fd].exchange(0) == 0) return;
  auto it = g.peer_of_fd.find(fd);
  if (it != g.peer_of_fd.end()) {
    auto p = g.per_peer.find(it->second);
    if (p != g.per_peer.end() && --p->second <= 0) g.per_peer.erase(p);
    g.peer_of_fd.erase(it);
  }
  if (auto e = g.endpoint_of_fd.find(fd); e != g.endpoint_of_fd.end()) {
    g.fd_of_endpoint.erase(e->second);
    g.endpoint_of_fd.erase(e);
  }
  g.open.fetch_sub(1);
}

}  // namespace

void StartAcceptGuard(const AcceptGuardOptions& options,
                      uint64_t max_tracked_fd) {
  Guard& g = G();
  g.port = options.port;
  g.max_connections = options.max_connections;
  g.max_per_peer = options.max_connections_per_peer;
  // One byte per descriptor, at most 16 MiB.
  g.tracked_size = std::min<uint64_t>(max_tracked_fd, uint64_t{1} << 24);
  g.tracked = new std::atomic<uint8_t>[g.tracked_size]();
  g.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  g.on = true;
}

int AcceptGuardOpenConnections() { return G().open.load(); }

bool CloseConnectionOf(const std::string& grpc_peer) {
  const size_t colon = grpc_peer.find(':');
  if (colon == std::string::npos) return false;
  const std::string endpoint = grpc_peer.substr(colon + 1);
  Guard& g = G();
  // Under mu: close() of this descriptor (Forget) waits, so the shutdown
  // cannot reach a reused descriptor.
  absl::MutexLock lock(&g.mu);
  auto it = g.fd_of_endpoint.find(endpoint);
  if (it == g.fd_of_endpoint.end()) return false;
  return shutdown(it->second, SHUT_RDWR) == 0;
}

}  // namespace diarization::server

using diarization::server::G;

extern "C" {

// libgrpc's listener calls this (grpc_accept4).
int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  namespace s = diarization::server;
  s::Guard& g = G();
  if (!g.on.load() || s::LocalPort(fd) != g.port) {
    return s::RawAccept4(fd, addr, len, flags);
  }
  while (true) {
    socklen_t given = len != nullptr ? *len : 0;
    const int c = s::RawAccept4(fd, addr, len, flags);
    if (c < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        s::CountTransportEvent(s::TransportEvent::kAcceptFdExhausted);
        s::RefuseQueued(fd);
        // gRPC re-arms its listener on EAGAIN (it gives up on EMFILE).
        errno = EAGAIN;
      }
      return -1;
    }
    if (s::Admit(c)) return c;
    s::Refuse(c);
    if (len != nullptr) *len = given;
  }
}

int close(int fd) {
  diarization::server::Guard& g = G();
  if (fd >= 0 && static_cast<uint64_t>(fd) < g.tracked_size &&
      g.tracked != nullptr && g.tracked[fd].load() != 0) {
    diarization::server::Forget(fd);
  }
  return diarization::server::RawClose(fd);
}

}  // extern "C"
