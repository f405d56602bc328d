#include "server/grpc_server.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/request_log.h"

namespace diarization::server {
namespace {

// Linking gRPC's reflection library registers its plugin for every server
// (a static initializer); this option takes it off one server's builder.
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    std::erase_if(*plugins, [](const auto& p) {
      return p->name() == "proto_server_reflection";
    });
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(
    const GrpcServerOptions& options,
    std::shared_ptr<runtime::Metrics> metrics) {
  if (absl::Status s = ValidateLimits(options.limits); !s.ok()) return s;
  if (absl::Status s = ValidateConnectionLimits(options.connection); !s.ok()) {
    return s;
  }
  std::unique_ptr<GrpcServer> server(new GrpcServer());
  absl::StatusOr<std::unique_ptr<runtime::ThreadPool>> pool =
      runtime::ThreadPool::Create({.threads = options.work_threads});
  if (!pool.ok()) return pool.status();
  server->pool_ = *std::move(pool);
  absl::StatusOr<std::unique_ptr<runtime::ThreadPool>> decode_pool =
      runtime::ThreadPool::Create(
          {.threads = options.decode_threads,
           .max_queued = std::max(1, options.max_queued_decodes),
           .nice = 19});
  if (!decode_pool.ok()) return decode_pool.status();
  server->decode_pool_ = *std::move(decode_pool);
  server->timer_ = std::make_unique<CallTimer>();
  server->state_ = std::make_unique<ServiceState>(
      options.limits, options.version, options.commit, std::move(metrics),
      ServiceThreads{.stream_pool = server->pool_.get(),
                     .decode_pool = server->decode_pool_.get(),
                     .timer = server->timer_.get()});
  server->state_->SetTokens(options.tokens);
  server->service_ = std::make_unique<DiarizationService>(*server->state_);

  // Both must be set before the builder is created.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen,
                           options.credentials != nullptr
                               ? options.credentials
                               : grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(server->service_.get());
  if (!options.reflection) {
    builder.SetOption(std::make_unique<WithoutReflection>());
  }
  const int max_bytes = static_cast<int>(options.limits.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  ApplyConnectionLimits(options.connection, builder);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("could not listen on ", options.listen,
                     " (address in use, not local, or malformed host:port?)"));
  }
  server->state_->SetHealthService(server->server_->GetHealthCheckService());
  return server;
}

GrpcServer::~GrpcServer() {
  if (server_ != nullptr && !drained_) {
    state_->BeginDrain();
    if (std::shared_ptr<runtime::Engine> engine = state_->engine()) {
      engine->Drain(absl::Now()).IgnoreError();
    }
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  // The reactors release their call slots from the pool (their deletes);
  // wait for them before the pool and the state go.
  if (state_ != nullptr)
    state_->WaitForNoCalls(absl::Now() + absl::Seconds(10));
}

void GrpcServer::SetEngine(std::shared_ptr<runtime::Engine> engine,
                           std::vector<v1::ModelInfo> models) {
  state_->SetServing(std::move(engine), std::move(models));
}

absl::Status GrpcServer::Drain(absl::Time deadline) {
  state_->BeginDrain();
  LogEvent("drain_started",
           absl::StrCat(state_->open_calls(), " calls open, ",
                        state_->busy_calls(), " with accepted work"));
  // Calls without accepted work (a stream that never sent its config) are
  // not waited for: the shutdown below cancels them.
  const bool all_finished = state_->WaitForNoBusyCalls(deadline);
  absl::Status status = absl::OkStatus();
  if (!all_finished) {
    status = absl::DeadlineExceededError(absl::StrCat(
        state_->busy_calls(),
        " calls were still open at the drain deadline; they end with "
        "UNAVAILABLE"));
  }
  // Jobs still running end with UNAVAILABLE now; the reactors then finish.
  if (std::shared_ptr<runtime::Engine> engine = state_->engine()) {
    engine->Drain(absl::Now()).IgnoreError();
  }
  // Calls without a job (e.g. a stream that never sent its config) are
  // cancelled by the shutdown.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  state_->WaitForNoCalls(absl::Now() + absl::Seconds(5));
  drained_ = true;
  LogEvent("drain_finished",
           status.ok() ? "all calls finished" : std::string(status.message()));
  return status;
}

}  // namespace diarization::server
