// A real diarization_server process for end-to-end tests: started on
// 127.0.0.1 with free ports (port 0, read back from --port_file), waited for
// until health reports SERVING, stopped with a signal.
#ifndef DIARIZATION_TESTS_SERVER_PROCESS_H_
#define DIARIZATION_TESTS_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"

namespace diarization::testing {

// A file under the test's runfiles ("server/diarization_server").
std::string Runfile(const std::string& path);

// A fresh directory under TEST_TMPDIR.
std::string NewTempDir(const std::string& name);

// Writes a random-weights model directory (tools/make_random_models, with
// the real community-1 PLDA from SharedModelsDir()) once per test binary and
// returns its path.
absl::StatusOr<std::string> RandomModelDir();

class ServerProcess {
 public:
  // Starts the server (or $DIARIZATION_SERVER_UNDER_TEST, when set) with
  // --models `models_dir` --device cpu plus `flags`,
  // and waits (up to 120 s) for health SERVING. Its stderr goes to a file in
  // TEST_TMPDIR (log_path()). `credentials` (default plaintext) are those of
  // channel() and of the health wait, for a server started with TLS flags.
  // `max_open_files` > 0: the process's RLIMIT_NOFILE, soft and hard.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& models_dir, const std::vector<std::string>& flags,
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
      int max_open_files = 0);

  // Kills the process if still running.
  ~ServerProcess();

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  // host:port of the gRPC listener (the host of the last --listen flag).
  std::string address() const;
  const std::string& log_path() const { return log_path_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  std::unique_ptr<v1::Diarization::Stub> NewStub() const;

  // Sends `sig`; Wait() returns the exit status (exit code, or 128 + signal).
  void Signal(int sig);
  int Wait();
  // The log text so far.
  std::string Log() const;
  // The server's resident set now (/proc/PID/statm), bytes; -1 once it has
  // exited.
  int64_t RssBytes() const;
  pid_t pid() const { return pid_; }

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  // Mutable: Log() notices an exit without waiting.
  mutable bool exited_ = false;
  mutable int exit_code_ = -1;
  std::string host_ = "127.0.0.1";
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::string log_path_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTS_SERVER_PROCESS_H_
