// A minimal authoritative DNS server on 127.0.0.1 (UDP, an ephemeral port)
// for tests that need a name whose addresses change while a gRPC client
// watches it, as a Kubernetes headless Service's A records do when pods
// come and go. gRPC's c-ares resolver can be pointed at it with an
// authority: dns://127.0.0.1:PORT/NAME:GRPC_PORT.
//
// It answers A queries for one name with the current address list (TTL 0),
// other types for that name with an empty NOERROR answer, and every other
// name with NXDOMAIN. A thread serves until destruction.
#ifndef DIARIZATION_TESTS_FAKE_DNS_SERVER_H_
#define DIARIZATION_TESTS_FAKE_DNS_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace diarization::testing {

class FakeDnsServer {
 public:
  // `name` without the trailing dot, e.g. "replicas.diarization.test".
  static absl::StatusOr<std::unique_ptr<FakeDnsServer>> Start(
      const std::string& name);
  ~FakeDnsServer();

  int port() const { return port_; }
  // Dotted IPv4 addresses ("127.0.0.2"); takes effect for the next query.
  void SetAddresses(const std::vector<std::string>& ipv4);
  // A queries answered so far (how often the client re-resolved).
  int a_queries() const { return a_queries_.load(); }

 private:
  FakeDnsServer() = default;
  void Serve();
  // The reply to one query packet; empty for a packet to ignore.
  std::string Answer(const std::string& query);

  std::string name_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> a_queries_{0};
  mutable absl::Mutex mu_;
  std::vector<uint32_t> addresses_ ABSL_GUARDED_BY(mu_);  // network order
  std::thread thread_;
};

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTS_FAKE_DNS_SERVER_H_
