// The gRPC server of the service: the Diarization service, the standard
// health service (grpc.health.v1) and server reflection, with the message
// size limits set. It starts NOT_SERVING (models loading); main.cc hands it
// the engine when the models are loaded, and drains it on SIGTERM.
#ifndef DIARIZATION_SERVER_GRPC_SERVER_H_
#define DIARIZATION_SERVER_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/thread_pool.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "server/auth/token_store.h"
#include "server/call_timer.h"
#include "server/connection_limits.h"
#include "server/diarization_service.h"
#include "server/limits.h"
#include "server/service_state.h"

namespace diarization::server {

struct GrpcServerOptions {
  // host:port; port 0 picks a free port (see GrpcServer::port()).
  std::string listen = "127.0.0.1:50051";
  ServiceLimits limits;
  // Threads that run stream messages (validate, resample a chunk, append).
  int work_threads = 2;
  // Threads that decode DiarizeFile uploads, at the lowest CPU priority
  // (nice 19: they use what streams and the engine leave); at
  // most max_queued_decodes uploads wait for one (RESOURCE_EXHAUSTED past
  // it).
  int decode_threads = 1;
  int max_queued_decodes = 4;
  ConnectionLimits connection;
  std::string version;
  std::string commit;
  // The port's credentials (auth/server_credentials.h); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Token auth (null: off): the calls' principals and per-token limits.
  // The token check itself is the processor attached to `credentials`.
  std::shared_ptr<const auth::TokenStore> tokens;
  // Serve grpc.reflection (off: UNIMPLEMENTED).
  bool reflection = true;
};

class GrpcServer {
 public:
  // Binds and starts serving; health is NOT_SERVING and Diarize/DiarizeFile
  // answer UNAVAILABLE until SetEngine. `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(
      const GrpcServerOptions& options,
      std::shared_ptr<runtime::Metrics> metrics);

  // Shuts down at once if Drain was not called.
  ~GrpcServer();

  // The bound port.
  int port() const { return port_; }
  ServiceState& state() { return *state_; }

  // Models loaded: serve with `engine`.
  void SetEngine(std::shared_ptr<runtime::Engine> engine,
                 std::vector<v1::ModelInfo> models);

  // Graceful drain: health NOT_SERVING and new calls UNAVAILABLE at once;
  // calls that hold accepted work run to completion until `deadline` (a
  // stream that has not sent its config holds none and is cut at once); the
  // engine drains (jobs still running end with UNAVAILABLE) and the gRPC
  // server shuts down. OK when every call finished before `deadline`,
  // DEADLINE_EXCEEDED when some had to be cut short.
  absl::Status Drain(absl::Time deadline);

 private:
  GrpcServer() = default;

  // Declaration order is destruction order reversed: the gRPC server goes
  // first, then the service, then the pools (which run the reactors' final
  // tasks and deletes, touching state_), the timer, then the state (which
  // holds the engine).
  std::unique_ptr<ServiceState> state_;
  std::unique_ptr<CallTimer> timer_;
  std::unique_ptr<runtime::ThreadPool> pool_;
  std::unique_ptr<runtime::ThreadPool> decode_pool_;
  std::unique_ptr<DiarizationService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool drained_ = false;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_GRPC_SERVER_H_
