#include "tests/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/common/status_macros.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "testing/test_data.h"

namespace diarization::testing {

namespace fs = std::filesystem;

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string root = srcdir != nullptr ? srcdir : ".";
  return root + "/diarization/" + path;
}

std::string NewTempDir(const std::string& name) {
  static std::atomic<int> counter{0};
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp != nullptr ? tmp : "/tmp") /
                       absl::StrCat(name, "-", getpid(), "-", counter++);
  fs::create_directories(dir);
  return dir.string();
}

namespace {

// Runs argv to completion; returns its exit code (or -1).
int RunCommand(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

absl::StatusOr<std::string> RandomModelDir() {
  static absl::Mutex mu(absl::kConstInit);
  static std::string* dir = nullptr;
  absl::MutexLock lock(&mu);
  if (dir != nullptr) return *dir;
  const std::string out = NewTempDir("models") + "/random";
  const std::string plda = SharedModelsDir() + "/community-1-plda";
  const int rc =
      RunCommand({Runfile("tools/make_random_models/make_random_models"),
                  "--out=" + out, "--plda_from=" + plda});
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("make_random_models failed (exit ",
                                            rc, "); PLDA from ", plda));
  }
  dir = new std::string(out);
  return *dir;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& models_dir, const std::vector<std::string>& flags,
    std::shared_ptr<grpc::ChannelCredentials> credentials, int max_open_files) {
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  const std::string dir = NewTempDir("server");
  const std::string port_file = dir + "/ports";
  p->log_path_ = dir + "/server.log";
  // DIARIZATION_SERVER_UNDER_TEST runs another build of the server (e.g. the
  // code before a fix, to see a test fail on it).
  const char* other = std::getenv("DIARIZATION_SERVER_UNDER_TEST");
  std::vector<std::string> args = {other != nullptr && *other != '\0'
                                       ? std::string(other)
                                       : Runfile("server/diarization_server"),
                                   "--models=" + models_dir,
                                   "--device=cpu",
                                   "--listen=127.0.0.1:0",
                                   "--metrics_listen=127.0.0.1:0",
                                   "--port_file=" + port_file};
  args.insert(args.end(), flags.begin(), flags.end());
  // The last --listen wins (absl flags); health checks and channel() go to
  // its host (e.g. 127.0.0.2 for a second replica on the same port).
  for (const std::string& a : args) {
    if (absl::StartsWith(a, "--listen=")) {
      const std::string hostport = a.substr(9);
      p->host_ = hostport.substr(0, hostport.rfind(':'));
    }
  }

  p->pid_ = fork();
  if (p->pid_ < 0) return absl::InternalError("fork failed");
  if (p->pid_ == 0) {
    const int fd =
        open(p->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
    }
    if (max_open_files > 0) {
      const rlimit r{.rlim_cur = static_cast<rlim_t>(max_open_files),
                     .rlim_max = static_cast<rlim_t>(max_open_files)};
      if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(126);
    }
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }

  // The port file appears once both ports are bound.
  const absl::Time end = absl::Now() + absl::Seconds(120);
  // OK while the server is alive and the 120 s have not passed.
  auto still_starting = [&](const char* when,
                            const char* timeout_message) -> absl::Status {
    int status = 0;
    if (waitpid(p->pid_, &status, WNOHANG) == p->pid_) {
      p->exited_ = true;
      return absl::InternalError(
          absl::StrCat("the server exited ", when, "; log:\n", p->Log()));
    }
    if (absl::Now() > end) {
      return absl::DeadlineExceededError(timeout_message);
    }
    return absl::OkStatus();
  };
  while (true) {
    std::ifstream in(port_file);
    if (in >> p->grpc_port_ >> p->metrics_port_) break;
    RETURN_IF_ERROR(
        still_starting("before listening", "no port file after 120 s"));
    absl::SleepFor(absl::Milliseconds(20));
  }
  p->channel_ = grpc::CreateChannel(p->address(),
                                    credentials != nullptr
                                        ? credentials
                                        : grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(p->channel_);
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(2));
    grpc::health::v1::HealthCheckResponse response;
    if (health->Check(&context, {}, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      break;
    }
    RETURN_IF_ERROR(
        still_starting("while loading", "health never SERVING in 120 s"));
    absl::SleepFor(absl::Milliseconds(50));
  }
  return p;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::string ServerProcess::address() const {
  return absl::StrCat(host_, ":", grpc_port_);
}

std::unique_ptr<v1::Diarization::Stub> ServerProcess::NewStub() const {
  return v1::Diarization::NewStub(channel_);
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

int ServerProcess::Wait() {
  if (exited_) return exit_code_;
  int status = 0;
  if (waitpid(pid_, &status, 0) != pid_) return -1;
  exited_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

int64_t ServerProcess::RssBytes() const {
  if (pid_ <= 0 || exited_) return -1;
  std::ifstream statm(absl::StrCat("/proc/", pid_, "/statm"));
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * sysconf(_SC_PAGESIZE);
}

std::string ServerProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  // Say how the process ended, if it did: a crash leaves no log line.
  int status = 0;
  if (pid_ > 0 && !exited_ && waitpid(pid_, &status, WNOHANG) == pid_) {
    exited_ = true;
    exit_code_ =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (exited_) {
    s << "[server process ended with status " << exit_code_
      << (exit_code_ > 128 ? " (killed by a signal)" : "") << "]\n";
  }
  return s.str();
}

}  // namespace diarization::testing
