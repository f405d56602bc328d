// diarization_server: the gRPC speaker-diarization service.
//
//   bazel run //server:diarization_server -- --models DIR [--device cpu]
//
// Start-up: listen at once (health NOT_SERVING, state "loading"), load and
// verify the model directory, build the devices and the engine, then report
// SERVING. SIGTERM or SIGINT: health NOT_SERVING, refuse new calls, let the
// open ones finish (up to --drain_timeout_s), stop, exit 0. Flags and
// metrics: docs/operations.md.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/common/diagnostics.h"
#include "engine/common/openblas_kernels.h"
#include "engine/common/status_macros.h"
#include "engine/common/usable_cpus.h"
#include "engine/pipeline/diarization.h"
#include "engine/runtime/backend_flags.h"
#include "engine/runtime/devices.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/metrics.h"
#include "prometheus/registry.h"
#include "server/accept_guard.h"
#include "server/auth/port_security.h"
#include "server/build_stamp.h"
#include "server/grpc_core_log.h"
#include "server/grpc_server.h"
#include "server/metrics_endpoint.h"
#include "server/model_info.h"
#include "server/open_file_limit.h"
#include "server/process_metrics.h"
#include "server/request_log.h"
#include "server/reset_flood_guard.h"
#include "server/transport_events.h"
#include "server/version.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC address host:port (port 0: any free port, see --port_file)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address host:port; empty disables it");
ABSL_FLAG(std::string, port_file, "",
          "If set, write the bound gRPC port and metrics port ('GRPC METRICS') "
          "to this file once listening (for scripts and tests)");
ABSL_FLAG(std::string, models, "",
          "Model directory (manifest.json, *.safetensors, plda/); "
          "default $DIARIZATION_MODELS");
// The backend flags (--device, --threads, --pipelines_per_device, the batch
// sizes and the --cuda_* switches) live in engine/runtime/backend_flags.h,
// shared with tools/diarize and the benchmarks.
ABSL_FLAG(int, work_threads, 2,
          "Server threads that decode and resample request audio");
ABSL_FLAG(int, host_threads, 0,
          "Engine host threads (clustering, partial results); 0: one per "
          "usable CPU (affinity and cgroup CPU quota), at least 2 and at most "
          "16");
ABSL_FLAG(int, clustering_blas_threads, 1,
          "BLAS (OpenBLAS) threads per clustering call, process-wide; 0 = "
          "the library's own (every core, or OPENBLAS_NUM_THREADS). 1: the "
          "host threads are the parallelism (many clusterings at once)");
ABSL_FLAG(int, callback_threads, 2,
          "Engine threads that deliver results and resume reads");
ABSL_FLAG(double, max_batch_wait_ms, 5.0,
          "A partial batch starts after its oldest window waited this long");
ABSL_FLAG(double, max_backlog_audio_s, 3600.0,
          "Admission control: audio seconds accepted and not yet processed; "
          "beyond it calls get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_message_bytes, 64 << 20,
          "Largest gRPC message either way (bounds a DiarizeFile upload)");
ABSL_FLAG(double, max_audio_s_per_request, 4 * 3600.0,
          "Longest audio per call, seconds");
ABSL_FLAG(double, max_stream_duration_s, 4 * 3600.0,
          "Longest wall-clock life of a Diarize stream, seconds");
ABSL_FLAG(int, max_concurrent_streams, 64,
          "Diarize + DiarizeFile calls open at once");
ABSL_FLAG(int, max_speakers, 64, "Largest accepted speaker hint");
ABSL_FLAG(double, drain_timeout_s, 30.0,
          "On SIGTERM/SIGINT, how long open calls may run before they are "
          "cut short with UNAVAILABLE");
ABSL_FLAG(double, max_connection_age_s, 0,
          "Close each client connection (GOAWAY) after this many seconds so "
          "that clients re-resolve and spread onto new replicas; open calls "
          "finish first (0: never)");
// Issue 13: abuse-proof serving (docs/api.md "Flow control and limits",
// docs/reliability.md).
ABSL_FLAG(int, decode_threads, 1,
          "Server threads that decode DiarizeFile uploads (apart from the "
          "stream threads, at a lower CPU priority)");
ABSL_FLAG(int, max_queued_decodes, 4,
          "Uploads that may wait for a decode thread; beyond it DiarizeFile "
          "gets RESOURCE_EXHAUSTED");
ABSL_FLAG(double, max_decode_cpu_s, 60.0,
          "CPU seconds one DiarizeFile decode may use (0 = unbounded)");
ABSL_FLAG(double, config_timeout_s, 10.0,
          "A Diarize stream must send its config within this many seconds");
ABSL_FLAG(double, stream_backlog_high_water_s, 60.0,
          "Flow control: a stream's next message is not read while its job "
          "holds more than this many seconds of unprocessed audio");
ABSL_FLAG(double, max_request_backlog_share, 0.25,
          "One recording may hold at most this share of max_backlog_audio_s");
ABSL_FLAG(int, max_calls_per_peer, 0,
          "Calls one peer (address) may have admitted at once (0 = no limit)");
ABSL_FLAG(double, max_peer_backlog_audio_s, 0.0,
          "Backlog seconds one peer may hold (0 = no limit)");
ABSL_FLAG(int64_t, max_rss_mb, 0,
          "Memory high-water mark: while the server's resident set is above "
          "it, new calls get RESOURCE_EXHAUSTED (0 = none)");
ABSL_FLAG(int64_t, max_job_memory_mb, 0,
          "Memory high-water mark: while jobs hold more audio and results "
          "than this, new calls get RESOURCE_EXHAUSTED (0 = none)");
ABSL_FLAG(double, keepalive_time_s, 60.0,
          "gRPC keepalive: ping a connection after this many idle seconds");
ABSL_FLAG(double, keepalive_timeout_s, 20.0,
          "gRPC keepalive: drop the connection when a ping is unanswered "
          "this long");
ABSL_FLAG(double, max_connection_idle_s, 300.0,
          "Close a connection without calls after this long (0 = never)");
ABSL_FLAG(double, max_connection_age_grace_s, 3600.0,
          "After max_connection_age_s, calls still open get this long");
ABSL_FLAG(int, max_streams_per_connection, 16,
          "Calls open at once on one HTTP/2 connection (more wait in the "
          "client); 0 = gRPC's default");
// Issue 39: the transport under attack (docs/reliability.md, "Transport").
ABSL_FLAG(double, write_timeout_s, 30.0,
          "A response the client has not taken within this many seconds "
          "(HTTP/2 window closed) ends the call, freeing its slot; also cut "
          "at max_stream_duration_s");
ABSL_FLAG(int, max_connections, 4096,
          "gRPC connections open at once; more are closed at accept (also "
          "kept below the open-file limit with headroom). 0 = no cap");
ABSL_FLAG(int, max_connections_per_peer, 512,
          "gRPC connections open at once from one IP address (0 = no cap)");
ABSL_FLAG(int, max_metadata_bytes, 8192,
          "Largest request header list (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE, "
          "GRPC_ARG_MAX_METADATA_SIZE)");
ABSL_FLAG(int, max_resets_per_s, 100,
          "A connection that cancels or resets more calls than this within "
          "one second is closed (HTTP/2 rapid reset); 0 = no limit");
ABSL_FLAG(double, log_lines_per_s, 20.0,
          "Per-call log lines that an attacker can trigger (refusals, errors, "
          "GetInfo, gRPC core's lines): at most this many per second of each "
          "status code, in bursts of --log_burst_lines; the rest are counted "
          "in diarization_log_lines_suppressed_total (0 = no limit)");
ABSL_FLAG(double, log_burst_lines, 200.0, "Burst of --log_lines_per_s");
ABSL_FLAG(double, metrics_request_timeout_s, 5.0,
          "The metrics port closes a connection that has not sent a whole "
          "request header this long after opening or after its previous "
          "response (slowloris); 0 = no limit");
ABSL_FLAG(int, metrics_connection_limit, 256,
          "Connections open at once on the metrics port");
ABSL_FLAG(int, metrics_per_ip_connection_limit, 8,
          "Connections open at once on the metrics port from one address");
ABSL_FLAG(std::string, git_commit, "",
          "Commit reported by GetInfo and diarization_build_info (default "
          "$DIARIZATION_GIT_COMMIT, else the commit stamped at build time)");
// Security (docs/operations.md, "Security"; ADR 0066).
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of the gRPC port; with --tls_key: TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients must present a certificate it signed "
          "(mutual TLS)");
ABSL_FLAG(int, tls_refresh_s, 60,
          "Seconds between re-reads of the certificate files and of "
          "--auth_tokens (rotation without a restart)");
ABSL_FLAG(std::string, auth_tokens, "",
          "Token file (JSON): calls need 'authorization: Bearer <token>'; "
          "health stays open");
ABSL_FLAG(bool, metrics_auth, true,
          "With --auth_tokens: /metrics needs a bearer token whose methods "
          "list \"metrics\" (false: open, for a cluster-internal scrape "
          "behind a NetworkPolicy)");
ABSL_FLAG(bool, metrics_tls, false,
          "Serve /metrics and /healthz over HTTPS with --tls_cert/--tls_key");
ABSL_FLAG(std::string, reflection, "auto",
          "gRPC server reflection: auto (on without --auth_tokens, off with "
          "it), on or off");

namespace diarization::server {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

absl::StatusOr<ServiceLimits> LimitsFromFlags() {
  ServiceLimits l;
  l.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  l.max_audio_s_per_request = absl::GetFlag(FLAGS_max_audio_s_per_request);
  l.max_stream_duration_s = absl::GetFlag(FLAGS_max_stream_duration_s);
  l.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  l.max_backlog_audio_s = absl::GetFlag(FLAGS_max_backlog_audio_s);
  l.max_speakers = absl::GetFlag(FLAGS_max_speakers);
  l.config_timeout_s = absl::GetFlag(FLAGS_config_timeout_s);
  l.stream_backlog_high_water_s =
      absl::GetFlag(FLAGS_stream_backlog_high_water_s);
  l.max_decode_cpu_s = absl::GetFlag(FLAGS_max_decode_cpu_s);
  l.write_timeout_s = absl::GetFlag(FLAGS_write_timeout_s);
  l.max_calls_per_connection = absl::GetFlag(FLAGS_max_streams_per_connection);
  RETURN_IF_ERROR(ValidateLimits(l));
  return l;
}

// SIGTERM/SIGINT arrive on whatever thread the kernel picks (gRPC and
// OpenMP threads may exist before main), so the handler only writes the
// signal number to a pipe (async-signal-safe); a plain thread reads it.
int g_signal_pipe[2] = {-1, -1};

void OnShutdownSignal(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
}

absl::Status InstallShutdownSignals() {
  if (::pipe(g_signal_pipe) != 0) {
    return absl::InternalError("pipe() for signal handling failed");
  }
  struct sigaction action {};
  action.sa_handler = OnShutdownSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGTERM, &action, nullptr) != 0 ||
      sigaction(SIGINT, &action, nullptr) != 0) {
    return absl::InternalError("sigaction(SIGTERM/SIGINT) failed");
  }
  return absl::OkStatus();
}

// Blocks until a shutdown signal; returns its name.
std::string WaitForShutdownSignal() {
  unsigned char byte = 0;
  while (::read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return byte == SIGTERM ? "SIGTERM" : "SIGINT";
}

// Issue 39, finding 2: the open-file limit up to its hard limit, and the
// connection caps kept below it with headroom (the models, the log, the
// metrics port's connections and the engine's files).
uint64_t g_open_file_limit = 0;

absl::Status GuardConnections(int grpc_port, bool metrics_on,
                              ServiceState& state) {
  const int global = absl::GetFlag(FLAGS_max_connections);
  const int per_peer = absl::GetFlag(FLAGS_max_connections_per_peer);
  if (global < 0 || per_peer < 0) {
    return absl::InvalidArgumentError(
        "--max_connections and --max_connections_per_peer must be >= 0");
  }
  const int64_t metrics_fds =
      metrics_on ? absl::GetFlag(FLAGS_metrics_connection_limit) : 0;
  const int64_t headroom = 64 + metrics_fds;
  const int64_t fit = std::max<int64_t>(
      8, static_cast<int64_t>(
             std::min<uint64_t>(g_open_file_limit, uint64_t{1} << 30)) -
             headroom - static_cast<int64_t>(g_open_file_limit / 8));
  const int cap = global == 0
                      ? static_cast<int>(fit)
                      : static_cast<int>(std::min<int64_t>(global, fit));
  if (absl::GetFlag(FLAGS_max_resets_per_s) < 0) {
    return absl::InvalidArgumentError("--max_resets_per_s must be >= 0");
  }
  SetMaxResetsPerSecond(absl::GetFlag(FLAGS_max_resets_per_s),
                        [&state](const std::string& grpc_peer) {
                          const bool closed = CloseConnectionOf(grpc_peer);
                          // Its calls end with it: their slots now, and
                          // its calls not yet handled are refused.
                          state.ReleaseConnection(grpc_peer, closed);
                          return closed;
                        });
  StartAcceptGuard({.port = grpc_port,
                    .max_connections = cap,
                    .max_connections_per_peer = per_peer},
                   g_open_file_limit);
  LogEvent(
      "connection_caps",
      absl::StrCat("gRPC connections: at most ", cap, " (",
                   cap < global || global == 0 ? "below the open-file limit"
                                               : "--max_connections",
                   "), ", per_peer == 0 ? "no cap" : absl::StrCat(per_peer),
                   " per address; open-file limit ", g_open_file_limit));
  return absl::OkStatus();
}

absl::Status Run() {
  RETURN_IF_ERROR(InstallShutdownSignals());
  {
    const OpenFileLimit files = RaiseOpenFileLimit();
    g_open_file_limit = files.soft;
    LogEvent("open_files", files.summary);
  }
  LogRateLimit::Get().Configure(absl::GetFlag(FLAGS_log_lines_per_s),
                                absl::GetFlag(FLAGS_log_burst_lines));
  // Static: the detached thread may outlive Run on an error return.
  static absl::Notification stop;
  std::thread signal_thread([] {
    LogEvent("signal", WaitForShutdownSignal());
    stop.Notify();
  });
  signal_thread.detach();

  ASSIGN_OR_RETURN(const ServiceLimits limits, LimitsFromFlags());
  const std::string commit = absl::GetFlag(FLAGS_git_commit).empty()
                                 ? EnvOr("DIARIZATION_GIT_COMMIT", kBuildCommit)
                                 : absl::GetFlag(FLAGS_git_commit);
  const std::string models_dir = absl::GetFlag(FLAGS_models).empty()
                                     ? EnvOr("DIARIZATION_MODELS", "")
                                     : absl::GetFlag(FLAGS_models);
  if (models_dir.empty()) {
    return absl::InvalidArgumentError(
        "no model directory: pass --models DIR or set DIARIZATION_MODELS "
        "(make one with random weights: bazel run //tools:make_random_models "
        "-- --out DIR)");
  }

  auth::SecurityFlags security_flags;
  security_flags.listen = absl::GetFlag(FLAGS_listen);
  security_flags.tls = {.cert = absl::GetFlag(FLAGS_tls_cert),
                        .key = absl::GetFlag(FLAGS_tls_key),
                        .client_ca = absl::GetFlag(FLAGS_tls_client_ca),
                        .refresh_s = absl::GetFlag(FLAGS_tls_refresh_s)};
  security_flags.auth_tokens = absl::GetFlag(FLAGS_auth_tokens);
  security_flags.reflection = absl::GetFlag(FLAGS_reflection);
  ASSIGN_OR_RETURN(auth::PortSecurity security,
                   auth::MakePortSecurity(security_flags));
  LogEvent("security", security.summary);

  // Metrics: the engine records, the server exposes.
  auto registry = std::make_shared<prometheus::Registry>();
  ASSIGN_OR_RETURN(
      std::shared_ptr<runtime::Metrics> metrics,
      runtime::Metrics::Create(registry, runtime::BuildInfo{kVersion, commit}));
  auto process_metrics = std::make_shared<ProcessMetrics>();
  auto transport_metrics = std::make_shared<TransportMetrics>();
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  int metrics_port = 0;
  if (!absl::GetFlag(FLAGS_metrics_listen).empty()) {
    MetricsEndpoint::Options metrics_options{
        .listen = absl::GetFlag(FLAGS_metrics_listen)};
    metrics_options.request_timeout_s =
        absl::GetFlag(FLAGS_metrics_request_timeout_s);
    if (absl::GetFlag(FLAGS_metrics_connection_limit) < 1 ||
        absl::GetFlag(FLAGS_metrics_per_ip_connection_limit) < 1) {
      return absl::InvalidArgumentError(
          "--metrics_connection_limit and --metrics_per_ip_connection_limit "
          "must be >= 1");
    }
    metrics_options.connection_limit =
        absl::GetFlag(FLAGS_metrics_connection_limit);
    metrics_options.per_ip_connection_limit =
        absl::GetFlag(FLAGS_metrics_per_ip_connection_limit);
    if (absl::GetFlag(FLAGS_metrics_auth)) {
      metrics_options.tokens = security.tokens;
    }
    if (absl::GetFlag(FLAGS_metrics_tls)) {
      if (!security_flags.tls.enabled()) {
        return absl::InvalidArgumentError(
            "--metrics_tls needs --tls_cert and --tls_key");
      }
      metrics_options.tls_cert = security_flags.tls.cert;
      metrics_options.tls_key = security_flags.tls.key;
      metrics_options.tls_refresh_s = security_flags.tls.refresh_s;
    }
    ASSIGN_OR_RETURN(
        metrics_endpoint,
        MetricsEndpoint::Start(metrics_options,
                               {registry, process_metrics, transport_metrics}));
    metrics_port = metrics_endpoint->port();
  }

  GrpcServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.credentials = security.credentials;
  options.tokens = security.tokens;
  options.reflection = security.reflection;
  options.limits = limits;
  options.work_threads = absl::GetFlag(FLAGS_work_threads);
  options.decode_threads = absl::GetFlag(FLAGS_decode_threads);
  options.max_queued_decodes = absl::GetFlag(FLAGS_max_queued_decodes);
  options.connection = {
      .keepalive_time_s = absl::GetFlag(FLAGS_keepalive_time_s),
      .keepalive_timeout_s = absl::GetFlag(FLAGS_keepalive_timeout_s),
      .max_connection_idle_s = absl::GetFlag(FLAGS_max_connection_idle_s),
      .max_connection_age_s = absl::GetFlag(FLAGS_max_connection_age_s),
      .max_connection_age_grace_s =
          absl::GetFlag(FLAGS_max_connection_age_grace_s),
      .max_streams_per_connection =
          absl::GetFlag(FLAGS_max_streams_per_connection),
      .max_metadata_bytes = absl::GetFlag(FLAGS_max_metadata_bytes)};
  options.version = kVersion;
  options.commit = commit;
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcServer> server,
                   GrpcServer::Start(options, metrics));
  RETURN_IF_ERROR(
      GuardConnections(server->port(), metrics_port != 0, server->state()));
  // /healthz mirrors the gRPC health; unhooked before the server goes.
  if (metrics_endpoint != nullptr) {
    metrics_endpoint->SetHealthCheck([s = server.get()] {
      return s->state().state() == ServingState::kServing;
    });
  }
  absl::Cleanup unhook_health = [&metrics_endpoint] {
    if (metrics_endpoint != nullptr) metrics_endpoint->SetHealthCheck(nullptr);
  };
  LogEvent("listening",
           absl::StrCat("grpc_port=", server->port(),
                        " metrics_port=", metrics_port, " state=loading"));
  if (const std::string path = absl::GetFlag(FLAGS_port_file); !path.empty()) {
    // Written whole to a temporary name, then renamed: readers never see a
    // partial file.
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      out << server->port() << " " << metrics_port << "\n";
      if (!out) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot write --port_file ", tmp));
      }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot rename ", tmp, " to ", path));
    }
  }

  // Load the models and build the engine while health says NOT_SERVING.
  const absl::Time load_start = absl::Now();
  ASSIGN_OR_RETURN(const runtime::BackendFlags backend,
                   runtime::BackendFlagsFromCommandLine());
  LogEvent("backend", runtime::DescribeBackendFlags(backend));
  ASSIGN_OR_RETURN(runtime::LoadedDevices loaded,
                   runtime::LoadDevices(models_dir, backend.devices));
  for (const runtime::Device& d : loaded.devices) {
    LogEvent("device", absl::StrCat(d.name, ": ", d.description));
  }

  runtime::EngineOptions engine_options;
  engine_options.segmentation_batch_size = backend.segmentation_batch_size;
  engine_options.embedding_batch_size = backend.embedding_batch_size;
  engine_options.live_windows_first = backend.live_windows_first;
  engine_options.max_batch_wait =
      absl::Milliseconds(absl::GetFlag(FLAGS_max_batch_wait_ms));
  engine_options.max_backlog_audio_s = limits.max_backlog_audio_s;
  // 0: one per usable CPU (affinity and cgroup quota: a pod limited to 4
  // CPUs gets 4), at least 2, at most 16 (a synchronized end of many streams
  // queues one final clustering per stream; docs/benchmarks.md, live path).
  engine_options.host_threads = absl::GetFlag(FLAGS_host_threads) != 0
                                    ? absl::GetFlag(FLAGS_host_threads)
                                    : std::clamp(UsableCpus(), 2, 16);
  engine_options.clustering_blas_threads =
      absl::GetFlag(FLAGS_clustering_blas_threads);
  engine_options.callback_threads = absl::GetFlag(FLAGS_callback_threads);
  engine_options.max_request_backlog_share =
      absl::GetFlag(FLAGS_max_request_backlog_share);
  engine_options.max_calls_per_peer = absl::GetFlag(FLAGS_max_calls_per_peer);
  engine_options.max_peer_backlog_audio_s =
      absl::GetFlag(FLAGS_max_peer_backlog_audio_s);
  engine_options.max_process_rss_bytes = absl::GetFlag(FLAGS_max_rss_mb) << 20;
  engine_options.max_job_memory_bytes = absl::GetFlag(FLAGS_max_job_memory_mb)
                                        << 20;
  ASSIGN_OR_RETURN(
      std::unique_ptr<runtime::Engine> engine,
      runtime::Engine::Create(engine_options, std::move(loaded.devices),
                              std::move(loaded.plda), metrics));
  server->SetEngine(std::shared_ptr<runtime::Engine>(std::move(engine)),
                    DescribeModels(loaded.models));
  LogEvent("serving",
           absl::StrCat(
               "models=", models_dir, " device=", backend.devices.device,
               " random_weights=", loaded.random_weights ? "true" : "false",
               " load_s=", absl::ToDoubleSeconds(absl::Now() - load_start)));
  if (loaded.random_weights) {
    LogEvent("warning",
             "the models have RANDOM weights: results are not diarization");
  }

  stop.WaitForNotification();
  const absl::Status drained = server->Drain(
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_s)));
  // A drain cut short is logged but is still a clean, intended exit.
  if (!drained.ok()) LogEvent("drain", std::string(drained.message()));
  std::move(unhook_health).Invoke();
  // The drain ended every call: nothing reports a cancel any more.
  SetMaxResetsPerSecond(0, nullptr);
  server.reset();
  metrics_endpoint.reset();
  return absl::OkStatus();
}

}  // namespace
}  // namespace diarization::server

int main(int argc, char** argv) {
  // First: it may execute the binary again (engine/common/openblas_kernels.h).
  const std::string openblas = diarization::ReexecWithOpenBlasKernels(argv);
  absl::SetProgramUsageMessage(
      "gRPC speaker-diarization service (docs/operations.md)");
  absl::ParseCommandLine(argc, argv);
  // Before gRPC starts: its own log lines become JSON events too.
  diarization::server::RouteGrpcCoreLogToJson();
  // The libraries' diagnostics (kernel choices at load, arena warnings)
  // become JSON event lines like everything else in the server's log.
  diarization::SetDiagnosticSink(
      [](std::string_view source, std::string_view message) {
        std::string detail(source);
        detail.append(": ").append(message);
        diarization::server::LogEvent("diagnostic", detail);
      });
  diarization::server::LogEvent("host", openblas);
  const absl::Status status = diarization::server::Run();
  if (!status.ok()) {
    diarization::server::LogEvent("fatal", status.ToString());
    std::fprintf(stderr, "diarization_server: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
